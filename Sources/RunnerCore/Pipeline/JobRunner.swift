import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Options a person sets on the command line for one run.
public struct RunOptions: Sendable {
    public var force = false
    /// Try blacklisted URLs again; a success removes them from the blacklist.
    public var retryFailed = false
    /// Overrides `concurrency.process`.
    public var workers: Int?
    public var style = ReportStyle.text
    /// Show libvips' own warnings from the workers.
    public var verbose = false
    /// Fetch and revalidate remote sources into the originals cache, and process nothing.
    public var downloadOnly = false

    public init() {}
}

/// The composition root: manifest -> plan -> schedule -> load -> process -> write -> record.
/// The only place that names every stage; the CLI calls it and maps its result to an exit code.
public enum JobRunner {
    /// Runs a job to completion (or until stopped). Throws `RunLock.Held` when another run
    /// holds the job and `JobFileError` for problems found while planning.
    public static func run(_ job: Job, options: RunOptions) throws -> RunSummary {
        let clock = Date()
        let planner = Planner(job: job, vipsVersion: VipsRuntime.version)
        let everything = try planner.expand()
        let lock = try RunLock(statePath: job.statePath)
        defer { withExtendedLifetime(lock) {} }
        let store = try StateStore(path: job.statePath)
        let state = try planningState(store, force: options.force)
        let plan = planner.classify(everything, state: state, retryFailed: options.retryFailed)

        // A killed run may have left temporary files beside the outputs and in the originals cache.
        var folders = Set(plan.items.map { Paths.directory(of: $0.outputPath) })
        folders.insert(job.remote.cacheDirectory)
        AtomicFile.removeStaleTemporaries(in: folders)

        let runID = try store.beginRun(vipsVersion: planner.vipsVersion, plan: plan)
        let reporter = Reporter(style: options.style, jobName: job.name)
        // Items are reported and counted only once committed: whatever a person saw finish survives a crash.
        let committed = Mutex(RunSummary())
        let recorder = Recorder(store: store, runID: runID) { events in
            for event in events {
                switch event {
                case .finished(let key, let outputPath, let outcome):
                    reporter.itemFinished(key: key, outputPath: outputPath, outcome: outcome)
                    committed.withLock { counts in
                        switch outcome {
                        case .done: counts.done += 1
                        case .failed: counts.failed += 1
                        case .blocked: break
                        }
                    }
                case .unchanged(let key, let outputPath, _):
                    reporter.itemUnchanged(key: key, outputPath: outputPath)
                    committed.withLock { $0.upToDate += 1 }
                case .started:
                    break
                }
            }
        }
        var summary = RunSummary()
        summary.planned = plan.count(.pending)
        summary.upToDate = plan.count(.upToDate)
        summary.blocked = plan.count(.blocked)
        reporter.planned(plan, toRun: summary.planned)
        recorder.record(plan.sources.flatMap { source in
            source.items.filter { $0.status == .blocked }.map { item in
                ItemEvent.finished(key: item.key, outputPath: item.outputPath,
                                   outcome: .blocked(blockedReason(source, state: state)))
            }
        })

        // Local files go straight to the workers; files that vanished since listing fail here.
        var local: [ScheduledTask] = []
        var remote: [PlannedSource] = []
        var localSkipped = 0
        var freshOriginals: [String] = []
        for source in plan.work {
            switch (source.origin, source.identity) {
            case (.remote, .success(.content)):
                // Planning found the cached original fresh (within `revalidate`): no request needed.
                guard let original = state.originals[source.key], access(original.file, R_OK) == 0 else {
                    remote.append(source)
                    continue
                }
                if options.downloadOnly { localSkipped += source.items.count; continue }
                freshOriginals.append(source.key)
                local.append(scheduledTask(source, path: original.file, id: local.count))
            case (.remote, _):
                remote.append(source)
            case (.file, _) where options.downloadOnly:
                localSkipped += source.items.count
            case (.file, .failure(let missing)):
                let failure = ItemFailure(.unreadable, missing.message)
                recorder.record(source.items.map {
                    .finished(key: $0.key, outputPath: $0.outputPath, outcome: .failed(failure, duration: 0))
                })
            case (.file(let path), .success):
                local.append(scheduledTask(source, path: path, id: local.count))
            }
        }
        try store.touchOriginals(freshOriginals)

        let control = RunControl()
        let handoff = TaskQueue()
        let downloads = RemoteStage(job: job, planner: planner, sources: remote, state: state, store: store,
                                    recorder: recorder, handoff: handoff, control: control,
                                    retryFailed: options.retryFailed, downloadOnly: options.downloadOnly,
                                    firstTaskID: local.count)
        let trap = SignalTrap(control) { signal, phase in
            handoff.cancel()
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
                               threadsPerImage: job.concurrency.threadsPerImage, supervisorPID: getpid()),
            quietWorkerStderr: !options.verbose)
        let scheduler = Scheduler(local: local, downloaded: handoff, settings: settings, control: control,
                                  recorder: recorder, reporter: reporter)
        reporter.startTicker()
        if downloads.isEmpty { handoff.close() } else { downloads.start() }
        let schedulerResult = Result { try scheduler.run(expectsDownloads: !downloads.isEmpty) }
        if schedulerResult.failure != nil { control.requestStop(signal: SIGTERM) }
        let downloaded = downloads.wait()
        try recorder.close()
        let counted = committed.withLock { $0 }
        summary.done = counted.done
        summary.failed = counted.failed
        summary.upToDate += counted.upToDate
        summary.notStarted = scheduler.notStarted + localSkipped
            + downloads.totalItems - downloaded.unchanged - downloaded.failed - downloaded.handedOver
        summary.workersStarted = (try? schedulerResult.get()) ?? 0
        summary.interrupted = control.stopSignal.flatMap { schedulerResult.failure == nil ? $0 : nil }
        summary.elapsedSeconds = Date().timeIntervalSince(clock)
        try store.finishRun(runID, summary: summary)
        try trimCache(job, store: store)
        reporter.finished(summary)
        _ = try schedulerResult.get()
        return summary
    }

    private static func scheduledTask(_ source: PlannedSource, path: String, id: Int) -> ScheduledTask {
        ScheduledTask(task: WorkerTask(id: id, source: path,
                                       requests: source.items.map { .init(outputIndex: $0.outputIndex, path: $0.outputPath) }),
                      keys: source.items.map(\.key), fingerprints: source.items.map(\.fingerprint))
    }

    private static func planningState(_ store: StateStore, force: Bool) throws -> PlanningState {
        PlanningState(ledger: force ? [:] : try store.ledger(), originals: try store.originals(),
                      blacklist: try store.blacklist())
    }

    private static func blockedReason(_ source: PlannedSource, state: PlanningState) -> String {
        guard case .remote(let remote) = source.origin, let entry = state.blacklist[remote.url] else { return "blacklisted" }
        return "blacklisted since \(ISO8601DateFormatter().string(from: entry.firstSeen)): \(entry.message)"
    }

    /// Keeps the originals cache under `cacheMaxBytes`, removing least recently used originals.
    private static func trimCache(_ job: Job, store: StateStore) throws {
        guard let limit = job.remote.cacheMaxBytes else { return }
        var originals = try store.originals().values.sorted { $0.usedAt < $1.usedAt }
        var total = originals.reduce(0) { $0 + $1.size }
        while total > limit, !originals.isEmpty {
            let oldest = originals.removeFirst()
            unlink(oldest.file)
            try store.forgetOriginal(oldest.sourceKey)
            total -= oldest.size
        }
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
    public static func plan(_ job: Job, force: Bool = false, retryFailed: Bool = false) throws -> Plan {
        let planner = Planner(job: job, vipsVersion: VipsRuntime.version)
        let everything = try planner.expand()
        guard FileManager.default.fileExists(atPath: job.statePath) else { return everything }
        let state = try planningState(try StateStore(path: job.statePath), force: force)
        return planner.classify(everything, state: state, retryFailed: retryFailed)
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
