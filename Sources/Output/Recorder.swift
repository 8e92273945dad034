import Foundation
import Synchronization
import Support
import Model
import JobFile
import State
import ObjectStore

/// Collects item events from the worker slots and writes them to the state database in batched
/// transactions, so bookkeeping stays a small part of a run. Outputs the workers staged are
/// published by their destinations (made durable under their final names, or confirmed by their
/// store) as one batch just before the transaction that records them done; an item is reported to
/// the user only once committed. A crash loses at most the last unflushed batch, whose outputs are
/// simply made again (an object: one repeated PUT of the same bytes).
package final class Recorder: Sendable {
    private let store: StateStore
    private let runID: Int64
    /// Each output's destination, by the output's name.
    private let places: [String: any Destination]
    /// How many objects go up at once.
    private let uploads: Int
    /// Destination kinds that failed the run: what is still bound for them is not tried again.
    private let failedKinds = Mutex<Set<ObjectIdentifier>>([])
    private let pending = Mutex<[ItemEvent]>([])
    private let wake = NSCondition()
    private let stopped = Mutex(false)
    private let failure = Mutex<(any Error)?>(nil)
    private let flushed = DispatchSemaphore(value: 0)
    private let onCommitted: @Sendable ([ItemEvent]) -> Void
    private let onFailure: @Sendable (any Error) -> Void

    package static let flushInterval = 0.2

    /// `onFailure` hears of the first batch that could not be recorded (the disk is full, the
    /// database was deleted) or published (its store refused the run or stayed unreachable), so
    /// the run stops rather than work on with nothing recorded.
    package init(store: StateStore, runID: Int64, outputs: [OutputSpec] = [], uploads: Int = 1,
                 onFailure: @escaping @Sendable (any Error) -> Void = { _ in }, onCommitted: @escaping @Sendable ([ItemEvent]) -> Void) {
        (self.store, self.runID, self.uploads, self.onFailure, self.onCommitted) = (store, runID, uploads, onFailure, onCommitted)
        places = Dictionary(outputs.map { ($0.name, $0.destination) }, uniquingKeysWith: { first, _ in first })
        let thread = Thread { [self] in flushLoop() }
        thread.name = "runner.recorder"
        thread.start()
    }

    /// Queues events for the next batch. An item finished `done` has its staged output published
    /// first; if that fails, it is recorded failed (`write`) instead.
    package func record(_ events: [ItemEvent]) {
        pending.withLock { $0.append(contentsOf: events) }
    }

    /// Writes everything still queued and stops the flush thread.
    package func close() throws {
        stopped.withLock { $0 = true }
        wake.withLock { wake.signal() }
        flushed.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func flushLoop() {
        while true {
            let isStopping = stopped.withLock { $0 }
            let batch = publishing(pending.withLock { exchange(&$0, with: []) })
            do {
                // Records written to a database that is no longer at its path would be lost unseen.
                if !batch.isEmpty { try store.checkStillInPlace() }
                try store.record(batch, runID: runID)
                onCommitted(batch)
            } catch {
                fail(error)
            }
            if isStopping { break }
            _ = wake.withLock { wake.wait(until: Date().addingTimeInterval(Self.flushInterval)) }
        }
        flushed.signal()
    }

    /// Stops the run on the first error only.
    private func fail(_ error: any Error) {
        let first = failure.withLock { recorded in
            defer { recorded = recorded ?? error }
            return recorded == nil
        }
        if first { onFailure(error) }
    }

    /// Publishes the outputs the `done` events staged, a batch per kind of destination (every
    /// folder's files synced together; a bucket's objects in parallel), and turns the events whose
    /// output could not be published into `write` failures. An item whose destination failed the
    /// run (its store refused it or stayed unreachable) is left out of the batch: it runs again
    /// next time; once a kind has failed, nothing more is sent to it.
    private func publishing(_ events: [ItemEvent]) -> [ItemEvent] {
        var groups: [ObjectIdentifier: [(index: Int, output: StagedOutput)]] = [:]
        for (index, event) in events.enumerated() {
            guard case .finished(let key, let path, .done(let rendered, _)) = event,
                  let place = places[ItemKey.split(key).output] else { continue }
            groups[ObjectIdentifier(type(of: place)), default: []].append(
                (index, StagedOutput(temporary: rendered.temporary, path: path, mediaType: rendered.facts?.mediaType ?? "application/octet-stream",
                                     place: place)))
        }
        var batch: [ItemEvent?] = events
        for (kind, group) in groups {
            let outputs = group.map(\.output)
            let results: [PublishFailure?] = failedKinds.withLock { $0.contains(kind) }
                ? outputs.map { unlink($0.temporary); return .destination(.unreachable(location: $0.path, detail: "not sent: the store failed the run")) }
                : outputs[0].place.publish(outputs, parallel: uploads)
            for ((index, output), result) in zip(group, results) {
                guard case .finished(let key, let path, let outcome) = events[index] else { continue }
                switch result {
                case nil: TestPause.at(TestPause.recorderUploaded, subject: output.path)
                case .output(let failure)?: batch[index] = .finished(key: key, outputPath: path, outcome: .failed(failure, seconds: outcome.seconds))
                case .destination(let error)?:
                    batch[index] = nil
                    failedKinds.withLock { _ = $0.insert(kind) }
                    fail(error)
                }
            }
        }
        return batch.compactMap { $0 }
    }
}
