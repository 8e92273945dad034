import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import JobFile
import Planning
import State
import Reporting
import Loading

/// A run's planning pass, in one write transaction that a job-file error rolls back: each source is
/// classified, recorded and spooled as found, so memory holds only digests and folder names.
struct RunPlan {
    let runID: Int64
    let counts: PlanCounts
    /// The sources with work to do, local and remote, in plan order.
    let local: PlannedSources
    let remote: PlannedSources
    /// Addresses more than one source may name: only a key of a source's own (`key`) allows that.
    let repeatedURLs: DigestSet
    /// The sweep of the run's output folders (and originals cache) for a killed run's temporary files.
    let sweep: AtomicFile.Sweep

    /// `foundWork` hears how many sources with work to do have been spooled so far (workers start on it).
    init(_ job: Job, planner: Planner, store: StateStore, options: RunOptions, foundWork: (Int) -> Void) throws {
        let localSpool = try PlanSpool(besideStateAt: job.statePath)
        let remoteSpool = try PlanSpool(besideStateAt: job.statePath)
        var folders: Set<String> = [job.remote.cacheDirectory]
        var repeatedURLs = DigestSet()
        var sourcesToDo = 0
        // Items two sources would write to one path: left out of the work, failed (a standing
        // collision as a known failure), as the spool is read.
        var collided: [String: ItemEvent] = [:]
        (runID, counts) = try store.beginRun(vipsVersion: planner.classifier.vipsVersion, limitsDigest: planner.classifier.limitsDigest) { pass in
            try planner.classifyAll(state: pass, memory: pass, retryFailed: options.retryFailed, force: options.force, collided: { key, path, failure in
                let standing = try pass.recorded(key)?.failureKind == .collision
                collided[key] = standing ? .stillFailed(key: key, outputPath: path)
                    : .finished(key: key, outputPath: path, outcome: .failed(failure, seconds: 0))
            }) { found in
                var source = found
                // Every output folder, up to date or not: a killed run may have staged a file beside
                // an output whose record still stands (a --force run stopped before it started the item).
                for item in source.items { folders.insert(job.outputs[item.outputIndex].destination.stagingFolder(for: item.outputPath, uploads: job.uploadFolder)) }
                source.items.removeAll { $0.status == .upToDate || $0.status == .knownFailure }
                guard !source.items.isEmpty || source.derivation != nil else { return }
                try pass.recordPlanned(source)
                sourcesToDo += 1
                foundWork(sourcesToDo)
                if let fetched = source.kind.fetched {
                    // Two sources share an address only when a key of their own tells them apart.
                    if source.key != fetched.location { _ = repeatedURLs.insert(fetched.location) }
                    try remoteSpool.append(source)
                } else {
                    try localSpool.append(source)
                }
            }
        }
        self.repeatedURLs = repeatedURLs
        local = try localSpool.finishWriting(collided: collided)
        remote = try remoteSpool.finishWriting(collided: collided)
        // A killed run may have left temporary files beside the outputs and in the originals cache;
        // folders unchanged since a sweep found them clean are not read again.
        let knownClean = try store.cleanFolders()
        sweep = AtomicFile.sweep(folders, knownClean: knownClean)
        try store.replaceCleanFolders(with: sweep.clean, recorded: knownClean)
    }
}

/// What stops a run early: the first SIGINT/SIGTERM drains (a second abandons), and so does the
/// end of the time budget. Lives until cancelled.
final class RunStops {
    private let trap: SignalTrap
    private let budget: (any DispatchSourceTimer)?

    init(control: RunControl, handoff: TaskQueue, reporter: Reporter, deadline: Date?) {
        trap = SignalTrap(control) { _, phase in
            handoff.cancel()
            reporter.notice(phase == .abandoning
                ? "stopping now: abandoning items in flight (they run again next time)"
                : "stopping: finishing items in flight (signal again to abandon them)")
        }
        budget = deadline.map { deadline in
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(wallDeadline: .now() + max(deadline.timeIntervalSinceNow, 0))
            timer.setEventHandler {
                TestPause.at(TestPause.runBudget)
                guard control.stop(for: .budget) else { return }
                handoff.cancel()
                reporter.notice("time budget reached: finishing items in flight; run again to continue")
            }
            timer.resume()
            return timer
        }
    }

    func cancel() {
        budget?.cancel()
        withExtendedLifetime(trap) {}
    }
}
