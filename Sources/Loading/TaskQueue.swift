import Foundation
import Model
import Planning

/// A source ready for an image worker, with the bookkeeping the supervisor keeps for it.
package struct ScheduledTask: Sendable {
    /// The image file (local, or a downloaded original) and the outputs to render from it.
    package let source: String
    package let requests: [OutputRequest]
    /// Item keys and fingerprints, parallel to `requests`.
    package let keys: [String]
    package let fingerprints: [String]
    /// The URL a downloaded source came from: content it cannot decode blacklists it.
    package let url: String?
    /// The source's key, its content's fingerprint (`Classifier.derivationFingerprint`: what its
    /// `source` row and derived values are stored under), and its derived values to compute (nil: none).
    package let sourceKey: String
    package let sourceFingerprint: String
    package let derivation: PlannedDerivation?
    package var crashes = 0

    /// `items` of `planned`, whose image is at `file` (downloaded from `url`) with content `fingerprint`, and its derived values.
    package init(file: String, url: String? = nil, items: [PlannedItem], of planned: PlannedSource, fingerprint: String,
                 derivation: PlannedDerivation?) {
        (source, self.url, sourceKey, sourceFingerprint, self.derivation) = (file, url, planned.key, fingerprint, derivation)
        requests = items.map { OutputRequest(outputIndex: $0.outputIndex, path: $0.outputPath, quality: $0.qualityHint) }
        (keys, fingerprints) = (items.map(\.key), items.map(\.fingerprint))
    }

    /// Where the source comes from, for people: its URL, else its file.
    package var location: String { url ?? source }

    /// Events that finish every item of the task, one outcome per output (a `{hash}` output's at the
    /// name its bytes gave it).
    package func finished(_ outcomes: [ItemOutcome]) -> [ItemEvent] {
        zip(zip(keys, requests), outcomes).map { item, outcome in
            var path = item.1.path
            if case .done(let rendered, _) = outcome, let named = rendered.path { path = named }
            return .finished(key: item.0, outputPath: path, outcome: outcome)
        }
    }
}

extension PlannedSource {
    /// Events that finish every item of the source the same way (blocked, download failed, vanished).
    package func finished(_ outcome: ItemOutcome) -> [ItemEvent] {
        items.map { .finished(key: $0.key, outputPath: $0.outputPath, outcome: outcome) }
    }
}

/// The hand-off from the download stage to the image workers: producers push ready sources,
/// worker slots pop them. Its length is what the downloader's back-pressure watches.
package final class TaskQueue: @unchecked Sendable {
    package init() {}

    private let condition = NSCondition()
    private var items: [ScheduledTask] = []
    private var head = 0
    private var closed = false
    private var cancelled = false

    package var count: Int { condition.withLock { items.count - head } }

    package func push(_ task: ScheduledTask) {
        condition.withLock { items.append(task); condition.signal() }
    }

    package func tryPop() -> ScheduledTask? { condition.withLock { takeLocked() } }

    /// Waits for the next task; nil once the producers are done and the queue is empty, or on cancel.
    package func pop() -> ScheduledTask? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if cancelled { return nil }
            if let task = takeLocked() { return task }
            if closed { return nil }
            condition.wait()
        }
    }

    /// No more tasks will be pushed.
    package func close() {
        condition.withLock { closed = true; condition.broadcast() }
    }

    /// Wakes every waiter with nothing: the run is stopping.
    package func cancel() {
        condition.withLock { cancelled = true; condition.broadcast() }
    }

    private func takeLocked() -> ScheduledTask? {
        guard head < items.count else { return nil }
        defer {
            head += 1
            if head > 1024 && head * 2 > items.count { items.removeFirst(head); head = 0 }
        }
        return items[head]
    }
}
