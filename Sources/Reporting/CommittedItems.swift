import Synchronization
import Model

/// The run's items as the recorder commits them: each shown to the user and counted only once
/// committed, so whatever a person saw finish survives a crash, and the summary counts the same.
package final class CommittedItems: Sendable {
    private let reporter: Reporter
    private let counts = Mutex(RunSummary())

    package init(reporter: Reporter) {
        self.reporter = reporter
    }

    /// The counts so far: done, failed, revalidated up to date, and still failed.
    package var summary: RunSummary { counts.withLock { $0 } }

    /// The recorder's commit hook.
    package func add(_ events: [ItemEvent]) {
        for event in events {
            switch event {
            case .finished(let key, let outputPath, let outcome):
                reporter.itemFinished(key: key, outputPath: outputPath, outcome: outcome)
                counts.withLock { counts in
                    switch outcome.state {
                    case .done: counts.done += 1
                    case .failed: counts.failed += 1
                    case .blocked, .running, .pending: break
                    }
                }
            case .unchanged(let key, let outputPath, _):
                reporter.itemUnchanged(key: key, outputPath: outputPath)
                counts.withLock { $0.upToDate += 1 }
            case .notRevalidated(let key, let outputPath, _):
                reporter.itemUnchanged(key: key, outputPath: outputPath, revalidated: false)
                counts.withLock { $0.notRevalidated += 1 }
            case .stillFailed(let key, let outputPath):
                reporter.itemStillFailed(key: key, outputPath: outputPath)
                counts.withLock { $0.knownFailures += 1 }
            case .started, .blacklisted, .unblocked:
                break
            }
        }
    }
}
