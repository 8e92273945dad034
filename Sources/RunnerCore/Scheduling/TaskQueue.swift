import Foundation

/// A source ready for an image worker, with the bookkeeping the supervisor keeps for it.
struct ScheduledTask: Sendable {
    let task: WorkerTask
    /// Item keys and fingerprints, parallel to `task.requests`.
    let keys: [String]
    let fingerprints: [String]
    /// The URL a downloaded source came from: content it cannot decode blacklists it.
    let url: String?
    var crashes = 0

    /// `items` of one source, whose image is at `file` (downloaded from `url`).
    init(file: String, url: String? = nil, items: [PlannedItem]) {
        task = WorkerTask(source: file, requests: items.map { .init(outputIndex: $0.outputIndex, path: $0.outputPath) })
        keys = items.map(\.key)
        fingerprints = items.map(\.fingerprint)
        self.url = url
    }
}

/// The hand-off from the download stage to the image workers: producers push ready sources,
/// worker slots pop them. Its length is what the downloader's back-pressure watches.
final class TaskQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [ScheduledTask] = []
    private var head = 0
    private var closed = false
    private var cancelled = false

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return items.count - head
    }

    func push(_ task: ScheduledTask) {
        condition.lock()
        items.append(task)
        condition.signal()
        condition.unlock()
    }

    /// The next task without waiting, or nil.
    func tryPop() -> ScheduledTask? {
        condition.lock()
        defer { condition.unlock() }
        return takeLocked()
    }

    /// Waits for the next task; nil once the producers are done and the queue is empty, or on cancel.
    func pop() -> ScheduledTask? {
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
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Wakes every waiter with nothing: the run is stopping.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
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
