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
        let vipsVersion = VipsRuntime.version
        let everything = try Planner(job: job, vipsVersion: vipsVersion).expand()
        let lock = try RunLock(statePath: job.statePath)
        defer { withExtendedLifetime(lock) {} }
        let store = try StateStore(path: job.statePath)
        let plan = options.force ? everything : Planner.markUpToDate(everything, ledger: try store.ledger())

        // A killed run may have left temporary files beside the outputs; no live process owns them.
        AtomicFile.removeStaleTemporaries(in: Set(plan.items.map { Paths.directory(of: $0.outputPath) }))

        let runID = try store.beginRun(vipsVersion: vipsVersion, plan: plan)
        let reporter = Reporter(style: options.style, jobName: job.name)
        // Items are reported only once committed: whatever a person saw finish survives a crash.
        let recorder = Recorder(store: store, runID: runID) { committed in
            for case .finished(let key, let outputPath, let outcome) in committed {
                reporter.itemFinished(key: key, outputPath: outputPath, outcome: outcome)
            }
        }
        var summary = RunSummary()
        summary.planned = plan.count(.pending)
        summary.upToDate = plan.count(.upToDate)
        summary.blocked = plan.count(.blocked)

        // Sources that vanished between listing and stat fail here, without a worker.
        var work: [PlannedSource] = []
        for source in plan.work {
            if case .failure(let missing) = source.identity {
                let failure = ItemFailure(.unreadable, missing.message)
                recorder.record(source.items.map {
                    .finished(key: $0.key, outputPath: $0.outputPath, outcome: .failed(failure, duration: 0))
                })
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
        summary.workersStarted = tally.workersStarted
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

    /// Everything that can be checked before any work: the job file itself, then its sources
    /// and output paths (missing folders, collisions, escapes). Returns the number of items.
    public static func validate(_ job: Job) throws -> Int {
        try Planner(job: job, vipsVersion: VipsRuntime.version).expand().items.count
    }

    /// What a run would do, without running it.
    public static func plan(_ job: Job, force: Bool = false) throws -> Plan {
        let everything = try Planner(job: job, vipsVersion: VipsRuntime.version).expand()
        guard !force, FileManager.default.fileExists(atPath: job.statePath) else { return everything }
        return Planner.markUpToDate(everything, ledger: try StateStore(path: job.statePath).ledger())
    }
}
