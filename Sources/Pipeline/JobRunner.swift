import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Keys
import JobFile
import Planning
import State
import Output
import Reporting
import Loading
import Scheduling

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
        let planner = Planner(job: job)
        let (lock, mirror, store) = try openState(job)
        defer { withExtendedLifetime(lock) {} }
        defer { mirror?.lease.release() }
        defer { store.close() }
        let launcher = workerLauncher(job, options)
        defer { launcher.close() }
        let plan = try RunPlan(job, planner: planner, store: store, options: options) { sourcesToDo in
            if !options.downloadOnly { launcher.prestart(forSources: sourcesToDo) }
        }

        let reporter = Reporter(style: options.style, jobName: job.name, jobFile: job.filePath, interval: options.progressInterval,
                                verbose: options.verbose)
        let committed = CommittedItems(reporter: reporter)
        let control = RunControl()
        let handoff = TaskQueue()
        let stopRecording: @Sendable (any Error) -> Void = { error in
            // Nothing more can be recorded (or kept): stop handing out work; the error ends the run.
            let named = StateDatabaseError.naming(job.statePath, error)
            control.stop(for: .failure(named))
            handoff.cancel()
            reporter.notice("\((named as? StateDatabaseError)?.summary ?? "\(named)"): stopping, finishing items in flight")
        }
        let recorder = Recorder(store: store, runID: plan.runID, outputs: job.outputs, uploads: job.remote.downloads,
                                onFailure: stopRecording, onCommitted: committed.add)
        let checkpoints = mirror?.checkpoints(store, onFailure: stopRecording)
        reporter.planned(plan.counts, sweep: plan.sweep)
        if let notice = S3Source.credentialsNotice(job) { reporter.notice(notice) }
        let downloads = RemoteStage(job: job, classifier: planner.classifier, sources: plan.remote, repeatedURLs: plan.repeatedURLs,
                                    store: store, recorder: recorder, handoff: handoff, control: control,
                                    retryFailed: options.retryFailed, downloadOnly: options.downloadOnly,
                                    notice: reporter.notice)
        let stops = RunStops(control: control, handoff: handoff, reporter: reporter, deadline: options.deadline)
        defer { stops.cancel() }
        let scheduler = Scheduler(local: localTasks(plan.local, classifier: planner.classifier, recorder: recorder, downloadOnly: options.downloadOnly),
                                  downloaded: handoff, settings: schedulerSettings(job, options), launcher: launcher,
                                  control: control, recorder: recorder, reporter: reporter)
        reporter.startTicker()
        if downloads.isEmpty { handoff.close() } else { downloads.start() }
        let workers = Result { try scheduler.run() }
        if case .failure(let error) = workers { control.stop(for: .failure(error)) }
        let downloadsResult = Result { try downloads.wait() }
        let recorded = Result { try recorder.close() }
        checkpoints?.cancel()
        let trimmed = Result { try trimCache(job, store: store) }
        var summary = summarize(committed.summary, plan: plan.counts, control: control, workers: workers,
                                options: options, elapsed: Date().timeIntervalSince(clock))
        // The first failure of the run's own decides its outcome and exit code, printed, recorded and returned alike.
        let failure = [control.failure, workers.failure, downloadsResult.failure, recorded.failure, trimmed.failure].lazy.compactMap { $0 }.first
        summary.failure = failure.map { RunFailure(StateDatabaseError.naming(job.statePath, $0)) }
        finish(&summary, job, runID: plan.runID, store: store, mirror: mirror, metricsPath: options.metricsPath, reporter: reporter)
        return summary
    }

    /// Takes the run lock, brings the state from its bucket if the job keeps it there, and opens
    /// it, closing a killed run's records.
    private static func openState(_ job: Job) throws -> (RunLock, StateMirror?, StateStore) {
        // Later runs plan inside a transaction that a job-file error rolls back; a first run checks
        // the job before it creates anything (with the state kept in a bucket, once the bucket has
        // none either).
        let mirror = StateMirror(job)
        let isFirst = { !FileManager.default.fileExists(atPath: job.statePath) }
        if mirror == nil, isFirst() { _ = try validate(job) }
        // With the state in a bucket the shard's lease comes first: a second run of the shard stops
        // having written nothing here, not even the lock file.
        try mirror?.lease.take()
        do {
            let lock = try RunLock(statePath: job.statePath)
            try mirror?.pull()
            try StateMirror.pullOtherLayouts(of: job)
            if mirror != nil, isFirst() { _ = try validate(job) }
            // Planning reads the job's state databases of other shard layouts too.
            let store = try StateStore(path: job.statePath, readingAlso: job.stateLayout.otherLayouts(than: job.shard))
            do {
                try store.checkIntact()
                // Holding the lock proves that a run still marked running was killed.
                try store.closeAbandonedRuns()
            } catch {
                store.close()
                throw error
            }
            return (lock, mirror, store)
        } catch {
            mirror?.lease.release()
            throw error
        }
    }

    /// Writes the metrics and the site manifest, records the run's end, keeps the state in its
    /// bucket and prints the run's summary; a failure of any becomes the run's own, unless it
    /// already has one.
    private static func finish(_ summary: inout RunSummary, _ job: Job, runID: Int64, store: StateStore, mirror: StateMirror?,
                               metricsPath: String?, reporter: Reporter) {
        var files: [() throws -> Void] = []
        if let metricsPath { files.append { [summary] in try MetricsFile.write(job, summary: summary, store: store, to: metricsPath) } }
        // Once the manifest that stops naming them is out, retired files start their `keepReplaced`.
        // A store that stayed unreachable is not asked again for the manifest: the next run writes it.
        let storeDown = summary.failure?.exitCode == ExitStatus.storeUnavailable
        if !storeDown || job.manifestPath.flatMap(job.destination(of:)) is FolderDestination { files.append {
            try SiteManifestWriter.writeJobManifest(job, stores: [store], shard: job.shard)
            try store.publishRetired()
            let removed = try removeRetired(job, store: store)
            if removed > 0 { reporter.notice("removed \(Format.plural(removed, "replaced file")) no manifest has named for keepReplaced") }
        } }
        for write in files {
            do { try write() } catch {
                // Said whatever else failed; it decides the exit code only of a run that did its work.
                if summary.failure == nil { summary.failure = RunFailure(error, afterTheWork: true) } else { reporter.notice("\(error)") }
            }
        }
        do { try store.finishRun(runID, summary: summary) } catch where summary.failure == nil {
            // Unrecorded: the next run closes this one as interrupted.
            summary.failure = RunFailure(StateDatabaseError.naming(job.statePath, error))
        } catch {}  // the run's own failure is what could not be recorded; it says more
        do { try mirror?.push(store) } catch {
            if summary.failure == nil { summary.failure = RunFailure(error) } else { reporter.notice("\(error)") }
        }
        reporter.finished(summary)
    }

    /// The run's counts: what was committed, against what was planned.
    private static func summarize(_ committed: RunSummary, plan planned: PlanCounts, control: RunControl,
                                  workers: Result<Int, any Error>, options: RunOptions, elapsed: Double) -> RunSummary {
        var summary = committed
        summary.planned = planned.pending
        summary.blocked = planned.blocked
        // Every planned item ends done, failed, skipped, revalidated unchanged (up to date or still failed), or not started.
        summary.notStarted = planned.pending - summary.done - summary.failed - summary.skipped - summary.upToDate
            - summary.knownFailures - summary.notRevalidated
        summary.upToDate += planned.upToDate
        summary.knownFailures += planned.knownFailures
        summary.strict = options.strict
        summary.workersStarted = (try? workers.get()) ?? 0
        summary.interrupted = control.stopSignal
        // A budget that ran out after the last item was handed out left nothing for the next run.
        summary.stoppedByBudget = control.budgetReached && summary.notStarted > 0
        summary.elapsedSeconds = elapsed
        return summary
    }

    /// Local files go straight to the workers; files that vanished since listing fail here.
    private static func localTasks(_ sources: PlannedSources, classifier: Classifier, recorder: Recorder,
                                   downloadOnly: Bool) -> Scheduler.LocalSource {
        return {
            while !downloadOnly, let source = try sources.next(recording: recorder.record) {
                switch source.identity {
                case .missing(let message), .notRegular(_, let message):
                    // Recorded under the fingerprint it failed with, as a worker's start records it:
                    // a path's type decides its failure until the type changes.
                    let started = source.items.map { ItemEvent.started(key: $0.key, fingerprint: $0.fingerprint) }
                    recorder.record(started + source.finished(.failed(ItemFailure(.unreadable, message), seconds: 0)))
                    continue
                case .file, .content, .etag, .unknown: break
                }
                return ScheduledTask(file: source.location, items: source.items, of: source,
                                     fingerprint: classifier.derivationFingerprint(source.identity), derivation: source.derivation)
            }
            return nil
        }
    }

    private static func schedulerSettings(_ job: Job, _ options: RunOptions) -> Scheduler.Settings {
        Scheduler.Settings(slots: options.workers ?? job.concurrency.process, recycleAfter: job.concurrency.recycleAfter,
                           itemTimeout: Double(job.limits.itemTimeout))
    }

    private static func workerLauncher(_ job: Job, _ options: RunOptions) -> WorkerLauncher {
        // A worker can die with a task queued for it: writing to its pipe must fail (EPIPE, the slot
        // then finds the death), not kill the supervisor. Workers inherit this and stop the same way.
        signal(SIGPIPE, SIG_IGN)
        let hello = WorkerHello(jobText: job.text, jobFilePath: job.filePath,
                                threadsPerImage: job.concurrency.threadsPerImage, supervisorPID: getpid())
        return WorkerLauncher(executable: currentExecutable(), hello: hello, quietStderr: !options.verbose,
                              slots: schedulerSettings(job, options).slots)
    }

    /// How the job's sources spread over `count` shards: sources per shard.
    public static func spread(_ job: Job, over count: Int) throws -> [Int] {
        var sources = [Int](repeating: 0, count: count)
        try Planner(job: job).forEachSource { source in
            sources[Shard.index(of: source.key, count: count)] += 1
        }
        return sources
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
    package static func currentExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Everything that can be checked before any work: the job file itself, then its sources
    /// and output paths (missing folders, collisions of the job's outputs, escapes). Returns the
    /// number of items; `collided` hears of items two sources would write to one path (what the
    /// sources hold, not the job file: they fail when run).
    public static func validate(_ job: Job, collided: (_ item: String, _ reason: String) -> Void = { _, _ in }) throws -> Int {
        var items = 0
        try Planner(job: job).forEachSource(collided: { item, _, failure in collided(item, failure.message) }) { items += $0.items.count }
        return items
    }

    /// What a run would do, without running it: each source as it is planned, then the counts
    /// and how many recorded items the job no longer plans (`runner prune` removes them).
    @discardableResult
    public static func plan(_ job: Job, force: Bool = false, retryFailed: Bool = false,
                            _ visit: (PlannedSource) throws -> Void = { _ in }) throws -> (counts: PlanCounts, orphaned: Int) {
        let planner = Planner(job: job)
        let others = job.stateLayout.otherLayouts(than: job.shard)
        guard let store = try StateStore.reading(at: job.statePath, readingAlso: others) else {
            // Never run under this layout: what other shard counts recorded is what the first run will find.
            if let first = others.first, let earlier = try StateStore.reading(at: first, readingAlso: Array(others.dropFirst())) {
                defer { earlier.close() }
                return (try earlier.plan { try planner.classifyAll(state: $0, retryFailed: retryFailed, force: force, visit) }, 0)
            }
            return (try planner.classifyAll(state: PlanningState(), retryFailed: retryFailed, force: force, visit), 0)
        }
        defer { store.close() }
        var current = CurrentItems(job: job)
        let counts = try store.plan { pass in
            try planner.classifyAll(state: pass, memory: pass, retryFailed: retryFailed, force: force) { source in
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

extension Result {
    fileprivate var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
