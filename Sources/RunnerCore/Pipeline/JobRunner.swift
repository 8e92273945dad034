import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Options a person sets on the command line for one run.
public struct RunOptions: Sendable {
    public var force = false
    /// Overrides `concurrency.process`.
    public var workers: Int?
    public var style = ReportStyle.text
    /// Show libvips' own warnings from the workers.
    public var verbose = false

    public init() {}
}

/// The composition root: manifest -> plan -> schedule -> load -> process -> write -> record.
/// The only place that names every stage; the CLI calls it and maps its result to an exit code.
public enum JobRunner {
    /// Runs a job to completion (or until stopped). Throws `RunLock.Held` when another run
    /// holds the job and `JobFileError` for problems found while planning.
    public static func run(_ job: Job, options: RunOptions) throws -> RunSummary {
        let clock = Date()
        let lock = try RunLock(statePath: job.statePath)
        defer { withExtendedLifetime(lock) {} }
        let store = try StateStore(path: job.statePath)
        let vipsVersion = VipsRuntime.version
        let plan = try Planner(job: job, vipsVersion: vipsVersion).plan(ledger: try store.ledger(), force: options.force)

        // A killed run may have left temporary files beside the outputs; no live process owns them.
        AtomicFile.removeStaleTemporaries(in: Set(plan.items.map { Paths.directory(of: $0.outputPath) }))

        let runID = try store.beginRun(vipsVersion: vipsVersion, plan: plan)
        let reporter = Reporter(style: options.style, jobName: job.name)
        let recorder = Recorder(store: store, runID: runID)
        var summary = RunSummary()
        summary.planned = plan.count(.pending)
        summary.upToDate = plan.count(.upToDate)
        summary.blocked = plan.count(.blocked)

        // Sources that vanished between listing and stat fail here, without a worker.
        var work: [PlannedSource] = []
        for source in plan.work {
            if case .failure(let missing) = source.identity {
                let failure = ItemFailure(.unreadable, missing.message)
                recorder.record(source.items.map { .finished(key: $0.key, outcome: .failed(failure, duration: 0)) })
                source.items.forEach { reporter.itemFinished(key: $0.key, outputPath: $0.outputPath, outcome: .failed(failure, duration: 0)) }
                summary.failed += source.items.count
            } else {
                work.append(source)
            }
        }
        reporter.planned(plan, toRun: summary.planned)

        let control = RunControl()
        let trap = SignalTrap(control) { signal, phase in
            reporter.notice(phase == .abandoning
                ? "stopping now: abandoning items in flight (they run again next time)"
                : "stopping: finishing items in flight (signal again to abandon them)")
        }
        defer { withExtendedLifetime(trap) {} }
        let settings = Scheduler.Settings(
            slots: options.workers ?? job.concurrency.process,
            recycleAfter: job.concurrency.recycleAfter,
            executable: currentExecutable(),
            hello: WorkerHello(jobText: job.text, jobFilePath: job.filePath,
                               threadsPerImage: job.concurrency.threadsPerImage),
            quietWorkerStderr: !options.verbose)
        let scheduler = Scheduler(work: work, settings: settings, control: control, recorder: recorder, reporter: reporter)
        reporter.startTicker()
        let schedulerResult = Result { try scheduler.run() }
        let tally = (try? schedulerResult.get()) ?? RunSummary()
        summary.done = tally.done
        summary.failed += tally.failed
        summary.notStarted = scheduler.notStarted
        summary.interrupted = control.stopSignal
        summary.elapsedSeconds = Date().timeIntervalSince(clock)
        try recorder.close()
        try store.finishRun(runID, summary: summary)
        reporter.finished(summary)
        _ = try schedulerResult.get()
        return summary
    }

    /// Where this executable lives, so workers are the very same build.
    static func currentExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// What a run would do, without running it.
    public static func plan(_ job: Job, force: Bool = false) throws -> Plan {
        let store = try StateStore(path: job.statePath)
        return try Planner(job: job, vipsVersion: VipsRuntime.version).plan(ledger: try store.ledger(), force: force)
    }
}
