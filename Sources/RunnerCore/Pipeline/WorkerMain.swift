internal import CSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The image worker: `runner worker`, started by the supervisor over pipes.
///
/// libvips runs only here, one source at a time, so a crash inside a decoder costs one process
/// and one item, never the run. The worker ignores SIGINT/SIGTERM (the supervisor decides when
/// it stops) and exits when its input closes, after finishing the item it holds, or at once
/// (SIGKILL) when the supervisor dies.
public enum WorkerMain {
    /// Test-only fault injection: a source whose path contains this text crashes the worker.
    static let crashTriggerVariable = "RUNNER_TEST_CRASH_ON"

    public static func run() -> Int32 {
        // Die with the supervisor: an orphan would finish the sources it holds and stage their
        // outputs after the next run had already removed the dead run's temporary files.
        _ = csystem_die_with_parent()
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        keepFreedMemory()
        // The protocol owns the original stdout; anything a library prints goes to stderr instead.
        let protocolOutput = dup(STDOUT_FILENO)
        dup2(STDERR_FILENO, STDOUT_FILENO)
        let channel = LineChannel(input: STDIN_FILENO, output: protocolOutput)
        // A supervisor that died before the request above took effect sent no signal.
        guard let hello = channel.receive(WorkerHello.self), getppid() == hello.supervisorPID else { return 1 }
        let job: Job
        do {
            job = try Job.parse(text: hello.jobText, filePath: hello.jobFilePath)
            try VipsRuntime.start(threadsPerImage: hello.threadsPerImage, blockUntrusted: job.limits.blockUntrustedLoaders)
        } catch {
            FileHandle.standardError.write(Data("runner worker: \(error)\n".utf8))
            return 1
        }
        let pipeline = ImagePipeline(outputs: job.outputs, limits: job.limits, stagingOwner: hello.supervisorPID)
        let crashTrigger = ProcessInfo.processInfo.environment[crashTriggerVariable].flatMap { $0.isEmpty ? nil : $0 }
        while let task = channel.receive(WorkerTask.self) {
            if let crashTrigger, task.source.contains(crashTrigger) {
                // Die the way a decoder fault would, without the Swift backtracer resuming us.
                signal(SIGSEGV, SIG_DFL)
                raise(SIGSEGV)
            }
            let started = DispatchTime.now().uptimeNanoseconds
            let results = pipeline.render(sourcePath: task.source, requests: task.requests)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let outputs = results.map { result in
                switch result {
                case .success(let rendered): WorkerReply.Output(rendered: rendered, failure: nil)
                case .failure(let failure): WorkerReply.Output(rendered: nil, failure: failure)
                }
            }
            guard channel.send(WorkerReply(id: task.id, outputs: outputs, seconds: seconds)) else { break }
        }
        return 0
    }

    /// Every image allocates and frees the same few megabytes of decode and region buffers.
    /// With glibc's defaults those pages go back to the kernel after each image and fault in
    /// again, zeroed, for the next (about 7% of a small thumbnail's time). Freed memory up to
    /// 128 MiB stays for reuse; blocks of 32 MiB or more are still mapped and unmapped on their
    /// own, so one huge image does not pin its memory, and workers are recycled anyway.
    private static func keepFreedMemory() {
        mallopt(M_MMAP_THRESHOLD, 32 << 20)
        mallopt(M_TRIM_THRESHOLD, 128 << 20)
    }
}
