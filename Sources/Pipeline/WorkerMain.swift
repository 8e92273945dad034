internal import CSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Imaging
import JobFile
import Processing
import Scheduling

/// The image worker (`runner worker`): libvips runs only here, one source at a time, so a decoder's
/// crash costs one item, never the run. It ignores SIGINT/SIGTERM (the supervisor decides), exits when
/// its input closes after finishing its item, or at once (SIGKILL) when the supervisor dies.
public enum WorkerMain {
    /// Test-only fault injection: a source whose path contains the text of `crashTriggerVariable`
    /// crashes the worker; one containing `garbleTriggerVariable`'s makes it answer with garbage.
    static let crashTriggerVariable = "RUNNER_TEST_CRASH_ON"
    static let garbleTriggerVariable = "RUNNER_TEST_GARBLE_ON"
    /// And one containing this text makes it stop answering, as a decoder stuck in a loop would.
    static let hangTriggerVariable = "RUNNER_TEST_HANG_ON"

    package static func run() -> Int32 {
        // Die with the supervisor: an orphan would finish the sources it holds and stage their
        // outputs after the next run had already removed the dead run's temporary files.
        _ = csystem_die_with_parent()
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        VipsRuntime.keepFreedMemory()
        // The protocol owns the original stdout; anything a library prints goes to stderr instead.
        let protocolOutput = dup(STDOUT_FILENO)
        dup2(STDERR_FILENO, STDOUT_FILENO)
        let channel = LineChannel(input: STDIN_FILENO, output: protocolOutput)
        do {
            let pipeline = try start(channel)
            return VipsRuntime.onLibvipsThread { serve(channel, pipeline) }
        } catch {
            FileDescriptor.writeLog("runner worker: \(error)\n", to: STDERR_FILENO)
            return 1
        }
    }

    /// Reads the supervisor's hello and sets up libvips and the pipeline for its job.
    private static func start(_ channel: LineChannel) throws -> ImagePipeline {
        let hello = try channel.receive(WorkerHello.self)
        // A supervisor that died before the parent-death request took effect sent no signal.
        guard getppid() == hello.supervisorPID else { throw ChannelError.closed }
        let job = try Job.parse(text: hello.jobText, filePath: hello.jobFilePath)
        capAddressSpace(job.limits.workerAddressSpace(threadsPerImage: hello.threadsPerImage))
        try VipsRuntime.start(threadsPerImage: hello.threadsPerImage, blockUntrusted: job.limits.blockUntrustedLoaders)
        return ImagePipeline(outputs: job.outputs, limits: job.limits, derive: job.derive, stagingOwner: hello.supervisorPID,
                             uploadFolder: job.uploadFolder, hashesSources: job.manifest != nil)
    }

    /// Renders tasks until the supervisor closes the pipe; 1 if it sent something unreadable.
    private static func serve(_ channel: LineChannel, _ pipeline: ImagePipeline) -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        func triggered(_ variable: String, by source: String) -> Bool { environment[variable].map { !$0.isEmpty && source.contains($0) } ?? false }
        while true {
            let task: WorkerTask
            do {
                task = try channel.receive(WorkerTask.self)
            } catch .closed {
                return 0
            } catch {
                FileDescriptor.writeLog("runner worker: \(error)\n", to: STDERR_FILENO)
                return 1
            }
            if triggered(crashTriggerVariable, by: task.source) {
                // Die the way a decoder fault would, without the Swift backtracer resuming us.
                signal(SIGSEGV, SIG_DFL)
                raise(SIGSEGV)
            }
            if triggered(hangTriggerVariable, by: task.source) {
                while true { pause() }
            }
            if triggered(garbleTriggerVariable, by: task.source) {
                _ = channel.send(["not": "a reply"])
                continue
            }
            TestPause.at(TestPause.workerTask, subject: task.source)
            VipsWarnings.startSource()
            let (outcomes, facts, derivation) = pipeline.render(sourcePath: task.source, requests: task.requests, derive: task.derive,
                                                                hashContent: task.hashContent)
            let reply = WorkerReply(id: task.id, outcomes: outcomes, warnings: VipsWarnings.ofCurrentSource(), source: facts,
                                    derivation: derivation)
            guard channel.send(reply) else { return 0 }
        }
    }

    /// A decoder that runs away (asks for gigabytes a header never promised) gets no more than
    /// `bytes` of address space: its allocation fails, libvips reports it, and only its source fails.
    private static func capAddressSpace(_ bytes: Int) {
        guard bytes < Int.max else { return }
        var limit = rlimit(rlim_cur: rlim_t(bytes), rlim_max: rlim_t(bytes))
        _ = setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit)
    }
}
