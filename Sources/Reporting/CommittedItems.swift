import Synchronization
import Model

/// The run's items as the recorder commits them: each shown to the user and counted only once
/// committed, so whatever a person saw finish survives a crash, and the summary counts the same.
package final class CommittedItems: Sendable {
    private let reporter: Reporter
    private let counts = Mutex(RunSummary())

    package init(reporter: Reporter) { self.reporter = reporter }

    /// The counts so far: done, failed, revalidated up to date, and still failed.
    package var summary: RunSummary { counts.withLock { $0 } }

    /// The recorder's commit hook. A task's events (every output of one source) are recorded
    /// together, so one batch holds all of a source's failures: they are said in one line per
    /// source and failure, naming the outputs.
    package func add(_ events: [ItemEvent]) {
        var failures = FailuresBySource()
        defer {
            for group in failures.groups { reporter.sourceFailed(group.source, outputs: group.outputs, failure: group.failure) }
        }
        for event in events {
            switch event {
            case .finished(let key, let outputPath, let outcome):
                reporter.itemFinished(key: key, outputPath: outputPath, outcome: outcome)
                if let failure = outcome.failure { failures.add(key, failure) }
                switch outcome {
                case .done(let rendered, _):
                    counts.withLock {
                        $0.done += 1
                        if let quality = rendered.quality { $0.qualityTargets.add(quality, bytes: rendered.bytes) }
                    }
                case .failed: counts.withLock { $0.failed += 1 }
                case .skipped: counts.withLock { $0.skipped += 1 }
                case .blocked: break
                }
            case .unchanged(let key, let outputPath, _): revalidated(key, outputPath, .upToDate, counting: \.upToDate)
            case .notRevalidated(let key, let outputPath, _): revalidated(key, outputPath, .notRevalidated, counting: \.notRevalidated)
            case .stillFailed(let key, let outputPath): revalidated(key, outputPath, .knownFailure, counting: \.knownFailures)
            case .source(_, _, _, _, let derived):
                counts.withLock { $0.derived += derived.count }
            case .started, .blacklisted, .unblocked:
                break
            }
        }
    }

    /// A URL source's item with no work to do, said and counted.
    private func revalidated(_ key: String, _ outputPath: String, _ state: RunEvent.Item.State, counting count: WritableKeyPath<RunSummary, Int>) {
        reporter.itemRevalidated(key: key, outputPath: outputPath, state)
        counts.withLock { $0[keyPath: count] += 1 }
    }
}

/// A batch's failed items grouped by source and failure, in the order they came.
private struct FailuresBySource {
    private(set) var groups: [(source: String, failure: ItemFailure, outputs: [String])] = []
    private var groupsOfSource: [String: [Int]] = [:]

    mutating func add(_ itemKey: String, _ failure: ItemFailure) {
        let (source, output) = ItemKey.split(itemKey)
        if let same = groupsOfSource[source, default: []].first(where: { groups[$0].failure == failure }) {
            groups[same].outputs.append(output)
        } else {
            groupsOfSource[source, default: []].append(groups.count)
            groups.append((source, failure, [output]))
        }
    }
}
