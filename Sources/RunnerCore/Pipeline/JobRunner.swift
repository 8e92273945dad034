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
    /// Exit 1 for failures carried over from earlier runs too, not only for new ones.
    public var strict = false
    /// Seconds between progress lines (or JSON progress events) when stderr is not a terminal.
    public var progressInterval = 5.0
    /// When to stop handing out work (`--deadline`, `--max-duration`); in-flight items finish.
    public var deadline: Date?
    /// Where to write Prometheus metrics at the end of the run (`--metrics`).
    public var metricsPath: String?

    public init() {}
}

/// The composition root: manifest -> plan -> schedule -> load -> process -> write -> record.
/// The only place that names every stage; the CLI calls it and maps its result to an exit code.
public enum JobRunner {
    /// Runs a job to completion (or until stopped). Throws `RunLock.Held` when another run
    /// holds the job and `JobFileError` for problems found while planning.
    public static func run(_ job: Job, options: RunOptions) throws -> RunSummary {
        // A SQLite error names the state database and says what it means for the job.
        try StateDatabaseError.naming(job.statePath) { try runJob(job, options: options) }
    }

    private static func runJob(_ job: Job, options: RunOptions) throws -> RunSummary {
        let clock = Date()
        let planner = Planner(job: job, vipsVersion: VipsRuntime.version)
        // Later runs plan inside a transaction that a job-file error rolls back; a first run checks
        // the job before it creates the state database at all.
        if !FileManager.default.fileExists(atPath: job.statePath) { _ = try validate(job) }
        let lock = try RunLock(statePath: job.statePath)
        defer { withExtendedLifetime(lock) {} }
        let store = try StateStore(path: job.statePath, readingAlso: otherStateDatabases(of: job))
        // Holding the lock proves that a run still marked running was killed.
        try store.closeAbandonedRuns()

        // Plan in one streaming pass: each source is classified, recorded and spooled as it is
        // found, so memory does not grow with the job. Only digests and folder names are kept.
        let localSources = try PlanSpool(besideStateAt: job.statePath)
        let remoteSources = try PlanSpool(besideStateAt: job.statePath)
        var folders: Set<String> = [job.remote.cacheDirectory]
        // Two sources share a URL only under different keys, which only an explicit `key` gives.
        let urlsCanRepeat = job.sources.contains { if case .url(_, let key, _) = $0 { key != nil } else { false } }
        var seenURLs = DigestSet()
        var repeatedURLs = DigestSet()
        let (runID, planned) = try store.beginRun(vipsVersion: planner.vipsVersion, limitsDigest: planner.limitsDigest) { pass in
            var counts = PlanCounts()
            try planner.forEachSource { found in
                var source = found
                try planner.classify(&source, state: pass, retryFailed: options.retryFailed, force: options.force)
                counts.add(source)
                // Every output folder, up to date or not: a killed run may have staged a file beside
                // an output whose record still stands (a --force run stopped before it started the item).
                for item in source.items { folders.insert(Paths.directory(of: item.outputPath)) }
                source.items.removeAll { $0.status == .upToDate || $0.status == .knownFailure }
                guard !source.items.isEmpty else { return }
                try pass.recordPlanned(source)
                switch source.origin {
                case .file:
                    try localSources.append(source)
                case .remote(let remote):
                    if urlsCanRepeat && !seenURLs.insert(remote.url) { _ = repeatedURLs.insert(remote.url) }
                    try remoteSources.append(source)
                }
            }
            return counts
        }
        try localSources.finishWriting()
        try remoteSources.finishWriting()
        // A killed run may have left temporary files beside the outputs and in the originals cache.
        AtomicFile.removeStaleTemporaries(in: folders)

        let reporter = Reporter(style: options.style, jobName: job.name, jobFile: job.filePath,
                                interval: options.progressInterval)
        // Items are reported and counted only once committed: whatever a person saw finish survives a crash.
        let committed = Mutex(RunSummary())
        let control = RunControl()
        let handoff = TaskQueue()
        let recorder = Recorder(store: store, runID: runID, onFailure: { error in
            // Nothing more can be recorded: stop handing out work; the error ends the run.
            control.stopForFailure()
            handoff.cancel()
            let named = StateDatabaseError.naming(job.statePath, error)
            reporter.notice("\((named as? StateDatabaseError)?.summary ?? "\(named)"): stopping, finishing items in flight")
        }) { events in
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
                case .stillFailed(let key, let outputPath):
                    reporter.itemStillFailed(key: key, outputPath: outputPath)
                    committed.withLock { $0.knownFailures += 1 }
                case .started, .blacklisted, .unblocked:
                    break
                }
            }
        }
        reporter.planned(planned)

        // Local files go straight to the workers; files that vanished since listing fail here.
        let downloadOnly = options.downloadOnly
        let nextLocal: Scheduler.LocalSource = {
            while !downloadOnly, let source = localSources.next() {
                guard case .file(let path) = source.origin else { continue }
                if case .missing(let message) = source.identity {
                    let failure = ItemFailure(.unreadable, message)
                    recorder.record(source.items.map {
                        .finished(key: $0.key, outputPath: $0.outputPath, outcome: .failed(failure, duration: 0))
                    })
                    continue
                }
                return ScheduledTask(file: path, items: source.items)
            }
            return nil
        }

        let downloads = RemoteStage(job: job, planner: planner, sources: remoteSources, repeatedURLs: repeatedURLs,
                                    store: store, recorder: recorder, handoff: handoff, control: control,
                                    retryFailed: options.retryFailed, downloadOnly: options.downloadOnly)
        let trap = SignalTrap(control) { signal, phase in
            handoff.cancel()
            reporter.notice(phase == .abandoning
                ? "stopping now: abandoning items in flight (they run again next time)"
                : "stopping: finishing items in flight (signal again to abandon them)")
        }
        defer { withExtendedLifetime(trap) {} }
        let budget = options.deadline.map { deadline in
            scheduleBudgetStop(at: deadline) {
                guard control.stopForBudget() else { return }
                handoff.cancel()
                reporter.notice("time budget reached: finishing items in flight; run again to continue")
            }
        }
        defer { budget?.cancel() }
        // A worker can die with a task queued for it: writing to its pipe must fail (EPIPE, the slot
        // then finds the death), not kill the supervisor. Workers inherit this and stop the same way.
        signal(SIGPIPE, SIG_IGN)
        let settings = Scheduler.Settings(
            slots: options.workers ?? job.concurrency.process,
            recycleAfter: job.concurrency.recycleAfter,
            executable: currentExecutable(),
            hello: WorkerHello(jobText: job.text, jobFilePath: job.filePath,
                               threadsPerImage: job.concurrency.threadsPerImage, supervisorPID: getpid()),
            quietWorkerStderr: !options.verbose)
        let scheduler = Scheduler(local: nextLocal, downloaded: handoff, settings: settings, control: control,
                                  recorder: recorder, reporter: reporter)
        reporter.startTicker()
        if downloads.isEmpty { handoff.close() } else { downloads.start() }
        let schedulerResult = Result { try scheduler.run() }
        if schedulerResult.failure != nil { control.requestStop(signal: SIGTERM) }
        downloads.wait()
        try recorder.close()
        var summary = committed.withLock { $0 }
        summary.planned = planned.pending
        summary.blocked = planned.blocked
        // Every planned item ends done, failed, revalidated unchanged (up to date or still failed), or not started.
        summary.notStarted = planned.pending - summary.done - summary.failed - summary.upToDate - summary.knownFailures
        summary.upToDate += planned.upToDate
        summary.knownFailures += planned.knownFailures
        summary.strict = options.strict
        summary.workersStarted = (try? schedulerResult.get()) ?? 0
        summary.interrupted = control.stopSignal.flatMap { schedulerResult.failure == nil ? $0 : nil }
        // A budget that ran out after the last item was handed out left nothing for the next run.
        summary.stoppedByBudget = control.budgetReached && summary.notStarted > 0
        summary.elapsedSeconds = Date().timeIntervalSince(clock)
        try store.finishRun(runID, summary: summary)
        try trimCache(job, store: store)
        if let path = options.metricsPath { try MetricsFile(job: job, summary: summary, store: store).write(to: path) }
        reporter.finished(summary)
        _ = try schedulerResult.get()
        return summary
    }

    /// The job's state databases of other shard layouts: work recorded under another shard count
    /// (or unsharded). Shards of this run's own count hold other sources only, and may be starting
    /// at this very moment, so they are left alone.
    private static func otherStateDatabases(of job: Job) -> [String] {
        let ownLayout = job.shard.map { "-of-\($0.count)." }
        return Shard.stateDatabases(of: job.jobStatePath).filter { path in
            path != job.statePath && !(ownLayout.map { Paths.lastComponent(path).contains($0) } ?? false)
        }
    }

    /// How the job's sources spread over `count` shards: sources per shard.
    public static func spread(_ job: Job, over count: Int) throws -> [Int] {
        var sources = [Int](repeating: 0, count: count)
        try Planner(job: job, vipsVersion: VipsRuntime.version).forEachSource { source in
            sources[Shard.index(of: source.key, count: count)] += 1
        }
        return sources
    }

    /// Calls `stop` once at `deadline` (at once if it has passed), on a timer that lives until cancelled.
    private static func scheduleBudgetStop(at deadline: Date, _ stop: @escaping @Sendable () -> Void) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(wallDeadline: .now() + max(deadline.timeIntervalSinceNow, 0))
        timer.setEventHandler(handler: stop)
        timer.resume()
        return timer
    }

    /// Keeps the originals cache under `cacheMaxBytes`, removing least recently used originals.
    private static func trimCache(_ job: Job, store: StateStore) throws {
        guard let limit = job.remote.cacheMaxBytes else { return }
        for oldest in try store.originalsBeyond(limit) {
            unlink(oldest.file)
            try store.forgetOriginal(oldest.sourceKey)
        }
    }

    /// Where this executable lives, so workers are the very same build.
    static func currentExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Everything that can be checked before any work: the job file itself, then its sources
    /// and output paths (missing folders, collisions, escapes). Returns the number of items.
    public static func validate(_ job: Job) throws -> Int {
        var items = 0
        try Planner(job: job, vipsVersion: VipsRuntime.version).forEachSource { items += $0.items.count }
        return items
    }

    /// What a run would do, without running it: each source as it is planned, then the counts
    /// and how many recorded items the job no longer plans (`runner prune` removes them).
    @discardableResult
    public static func plan(_ job: Job, force: Bool = false, retryFailed: Bool = false,
                            _ visit: (PlannedSource) throws -> Void = { _ in }) throws -> (counts: PlanCounts, orphaned: Int) {
        let planner = Planner(job: job, vipsVersion: VipsRuntime.version)
        var counts = PlanCounts()
        func planAll(_ state: some PlanningLookup, _ visit: (PlannedSource) throws -> Void) throws {
            try planner.forEachSource { found in
                var source = found
                try planner.classify(&source, state: state, retryFailed: retryFailed, force: force)
                counts.add(source)
                try visit(source)
            }
        }
        let others = otherStateDatabases(of: job)
        guard let store = try StateStore.existing(at: job.statePath, readingAlso: others) else {
            // Never run under this layout: what other shard counts recorded is what the first run will find.
            if let first = others.first, let earlier = try StateStore.existing(at: first, readingAlso: Array(others.dropFirst())) {
                try earlier.plan { try planAll($0, visit) }
            } else {
                try planAll(PlanningState(), visit)
            }
            return (counts, 0)
        }
        var current = CurrentItems()
        try store.plan { pass in
            try planAll(pass) { source in
                current.insert(source)
                try visit(source)
            }
        }
        var orphaned = 0
        try store.sweepItems { recorded in
            if !current.plans(recorded) { orphaned += 1 }
            return false
        }
        return (counts, orphaned)
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
