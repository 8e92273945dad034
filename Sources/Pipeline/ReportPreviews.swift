import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Model
import JobFile
import Imaging
import Reporting
import Scheduling

/// `runner report`: its contact sheet's previews are made by worker processes through the outputs'
/// pipeline, so a damaged output costs only its own preview; libvips here only encodes ThumbHash
/// placeholders (32 px PNGs from decoded hashes).
extension JobRunner {
    /// Previews fit inside 256 × 192 (a tile is about 210 × 170), without metadata.
    static let previewJobText = """
        {"version": 1, "name": "report previews", "sources": [{"glob": "/nonexistent/*"}],
         "outputs": [{"name": "preview", "path": "/nonexistent/{stem}.webp",
                      "chain": [{"op": "thumbnail", "width": 256, "height": 192, "fit": "inside"}],
                      "format": {"type": "webp", "quality": 70}}]}
        """

    public static func report(_ job: Job, options: HTMLReport.Options) throws -> HTMLReport.Outcome {
        if job.derive.values.contains(where: { type(of: $0).name == ThumbHash.name }) {
            try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true)
        }
        let hello = WorkerHello(jobText: previewJobText, jobFilePath: job.filePath, threadsPerImage: 1, supervisorPID: getpid())
        return try HTMLReport(job: job, options: options).write { wanted in
            let tasks = wanted.map { WorkerTask(source: $0.output, requests: [OutputRequest(outputIndex: 0, path: $0.preview)]) }
            let outcomes = WorkerBatch.render(tasks, hello: hello, workers: job.concurrency.process,
                                              timeout: Double(job.limits.itemTimeout), verbose: false)
            return zip(wanted, outcomes).map { wanted, outcomes in
                guard case .done(let rendered, _)? = outcomes.first, let width = rendered.sourceWidth,
                      let height = rendered.sourceHeight else { return nil }
                return SheetPreviews.Made(staged: AtomicFile.Staged(temporary: rendered.temporary, path: wanted.preview),
                                          width: width, height: height)
            }
        }
    }
}
