import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import JobFile
import Planning
import Loading
import Scheduling

/// `runner preview JOB FILE-OR-URL`: one source through the job's outputs, as a run would render
/// it (a worker process, the same pipeline and encoders), into a scratch folder. It reads the job
/// file only: no state database, lock, originals cache or output of the job is touched.
public enum Preview {
    /// One output's file in the scratch folder, or why it failed.
    public struct Rendered: Sendable {
        public let output, path: String
        public let result: Result<(width: Int, height: Int, bytes: Int), ItemFailure>
        public let seconds: Double
        /// Not made, and why: a narrower output of its block holds its bytes.
        public var skipped: String? = nil
        /// How an output with a quality target got its quality.
        package var quality: QualityOutcome? = nil
    }

    /// Wrong arguments (exit 64), or a URL that could not be fetched (exit 1).
    public enum Failure: ExitCoded, CustomStringConvertible {
        case noSuchSource(String)
        case notARegularFile(String)
        case badURL(String)
        case unknownOutput(String, known: [String])
        case download(String, String)

        public var description: String {
            switch self {
            case .noSuchSource(let path): "no such file: \(path)"
            case .notARegularFile(let path): "not a regular file: \(path)"
            case .badURL(let text): "not an http or https URL: \(text)"
            case .unknownOutput(let name, let known): Suggestion.unknown("output", name, known: known)
            case .download(let url, let why): "cannot fetch \(url): \(why)"
            }
        }

        public var exitCode: Int32 { if case .download = self { ExitStatus.someItemsFailed } else { ExitStatus.commandLine } }
    }

    /// Renders `source` (a path, relative to the current folder, or an http(s) URL) through every
    /// output, or the one named `output`, into `folder` as `STEM.OUTPUT.EXT` after the file the run
    /// would write, so previews of several sources can share a folder.
    public static func render(_ job: Job, source: String, output: String?, into folder: String,
                              verbose: Bool) throws -> [Rendered] {
        let planner = Planner(job: job)
        let wanted = try output.map { name in
            guard let index = job.outputNames.firstIndex(of: name) else { throw Failure.unknownOutput(name, known: job.outputNames) }
            return index
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let download = RemoteURL.looksRemote(source) ? try temporaryFolder() : nil
        defer { if let download { try? FileManager.default.removeItem(atPath: download) } }
        let (discovered, file) = try located(source, job: job, downloadFolder: download)
        let items = try planner.items(of: discovered).filter { wanted == nil || $0.outputIndex == wanted }
        let requests = items.map { item in
            let (stem, ext) = Paths.splitExtension(Paths.lastComponent(item.outputPath))
            let name = [stem, item.outputName.replacingOccurrences(of: "/", with: "_"), ext].filter { !$0.isEmpty }.joined(separator: ".")
            return OutputRequest(outputIndex: item.outputIndex, path: folder + "/" + name)
        }
        // One task on one worker, as a run hands it out.
        let hello = WorkerHello(jobText: job.text, jobFilePath: job.filePath,
                                threadsPerImage: job.concurrency.threadsPerImage, supervisorPID: getpid())
        let outcomes = zip(requests, WorkerBatch.render([WorkerTask(source: file, requests: requests)], hello: hello, workers: 1,
                                                        timeout: Double(job.limits.itemTimeout), verbose: verbose)[0])
        let published = AtomicFile.publish(outcomes.compactMap { outcome in
            if case .done(let rendered, _) = outcome.1 { AtomicFile.Staged(temporary: rendered.temporary, path: rendered.path ?? outcome.0.path) } else { nil }
        })
        var failures = published.makeIterator()
        return zip(items, outcomes).map { item, outcome in
            let (request, result) = outcome
            let rendered: Result<(width: Int, height: Int, bytes: Int), ItemFailure> = switch result {
            case .done(let image, _): (failures.next() ?? nil).map { .failure($0) } ?? .success((image.width, image.height, image.bytes))
            case .failed(let failure, _): .failure(failure)
            case .blocked(let reason): .failure(ItemFailure(.download, reason))
            case .skipped: .success((0, 0, 0))
            }
            let path = if case .done(let image, _) = result, let named = image.path { named } else { request.path }
            let quality = if case .done(let image, _) = result { image.quality } else { nil as QualityOutcome? }
            return Rendered(output: item.outputName, path: path, result: rendered, seconds: result.seconds,
                            skipped: result.state == .skipped ? result.reason : nil, quality: quality)
        }
    }

    /// A new folder under the system's temporary folder (`runner-preview-XXXXXX`).
    public static func temporaryFolder() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/runner-preview-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }
        guard let made else { throw CocoaError(.fileWriteUnknown) }
        return Paths.normalize(made)
    }

    /// The source as the planner sees it, and the file the worker reads: the local file, or the URL
    /// fetched into `downloadFolder` as the job's own source of it (key and headers) where it has one.
    private static func located(_ source: String, job: Job, downloadFolder: String?) throws -> (DiscoveredSource, String) {
        guard let downloadFolder else {
            let path = Paths.resolve(source, against: FileManager.default.currentDirectoryPath)
            var info = stat()
            guard stat(path, &info) == 0 else { throw Failure.noSuchSource(path) }
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw Failure.notARegularFile(path) }
            return (.file(path, relativeDirectory: ""), path)
        }
        guard let url = RemoteURL(source)?.normalized else { throw Failure.badURL(source) }
        let discovered = job.sources.lazy.compactMap { $0.listing.source(at: nil) }
            .first { $0.origin.kind.fetched?.location == url } ?? .remote(url, key: nil, headers: [:])
        guard let fetched = discovered.origin.kind.fetched else { throw Failure.badURL(source) }
        let file = downloadFolder + "/original"
        switch Downloader.fetch(fetched, to: file, settings: job.remote) {
        case .fetched, .notModified: break
        case .failed(let failure, _): throw Failure.download(url, failure.description)
        }
        return (discovered, file)
    }
}
