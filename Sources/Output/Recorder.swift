import Foundation
import Synchronization
import Support
import Model
import JobFile
import State
import ObjectStore

/// Collects item events from the worker slots and writes them to the state database in batched
/// transactions, so bookkeeping stays a small part of a run. Outputs the workers staged are
/// published (made durable under their final names, `AtomicFile.publish`) as one batch just before
/// the transaction that records them done; an item is reported to the user only once committed.
/// A crash loses at most the last unflushed batch, whose outputs are simply made again.
package final class Recorder: Sendable {
    private let store: StateStore
    private let runID: Int64
    /// `{hash}` outputs by name: an item's file of other bytes goes once the new one is published.
    private let hashed: [String: PathTemplate]
    /// Outputs written to a bucket, by name, and what writes them.
    private let buckets: [String: BucketOutput]
    private let writer: ObjectWriter?
    private let pending = Mutex<[ItemEvent]>([])
    private let wake = NSCondition()
    private let stopped = Mutex(false)
    private let failure = Mutex<(any Error)?>(nil)
    private let flushed = DispatchSemaphore(value: 0)
    private let onCommitted: @Sendable ([ItemEvent]) -> Void
    private let onFailure: @Sendable (any Error) -> Void

    package static let flushInterval = 0.2

    /// `onFailure` hears of the first batch that could not be recorded (the disk is full, the
    /// database was deleted), so the run stops rather than work on with nothing recorded.
    /// `uploads` is how many objects go up at once, each retried as `retry` says.
    package init(store: StateStore, runID: Int64, outputs: [OutputSpec] = [], uploads: Int = 1, retry: RetryPolicy = .standard,
                 onFailure: @escaping @Sendable (any Error) -> Void = { _ in }, onCommitted: @escaping @Sendable ([ItemEvent]) -> Void) {
        (self.store, self.runID, self.onFailure, self.onCommitted) = (store, runID, onFailure, onCommitted)
        hashed = Dictionary(outputs.compactMap { $0.template.hashSuffix == nil ? nil : ($0.name, $0.template) }, uniquingKeysWith: { first, _ in first })
        buckets = Dictionary(outputs.compactMap { output in output.bucket.map { (output.name, $0) } }, uniquingKeysWith: { first, _ in first })
        writer = buckets.isEmpty ? nil : ObjectWriter(parallel: uploads, retry: retry)
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
            let batch = Self.publishingStagedOutputs(uploadingObjects(pending.withLock { exchange(&$0, with: []) }))
            do {
                try removeReplacedFiles(batch)
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
}

extension Recorder {
    /// Publishes, as one batch, every output the `done` events staged, and turns the events whose
    /// output could not be published into `write` failures. A skipped item's file from a night its
    /// source was wider is removed first: no manifest names it, and a crash before the record only
    /// makes the next run skip it again.
    static func publishingStagedOutputs(_ events: [ItemEvent]) -> [ItemEvent] {
        for case .finished(_, let path, .skipped) in events where !ObjectURL.names(path) { unlink(path) }
        let staged = events.compactMap { event -> AtomicFile.Staged? in
            guard case .finished(_, let path, .done(let rendered, _)) = event, !ObjectURL.names(path) else { return nil }
            return AtomicFile.Staged(temporary: rendered.temporary, path: path)
        }
        guard !staged.isEmpty else { return events }
        var failures = AtomicFile.publish(staged).makeIterator()
        return events.map { event in
            guard case .finished(let key, let path, .done(_, let seconds)) = event, !ObjectURL.names(path) else { return event }
            guard let failure = failures.next() ?? nil else { return event }
            return .finished(key: key, outputPath: path, outcome: .failed(failure, seconds: seconds))
        }
    }
}

extension Recorder {
    /// A `{hash}` item published under a new name removes its file of other bytes, the same name
    /// but for the digits, before it is recorded: a crash between leaves a record of a missing
    /// file, which the next run makes again, and never a file no record names.
    private func removeReplacedFiles(_ events: [ItemEvent]) throws {
        guard !hashed.isEmpty else { return }
        for case .finished(let key, let path, .done) in events {
            guard let template = hashed[ItemKey.split(key).output], let planned = template.planned(from: path),
                  let old = try store.recordedOutputPath(key), old != path, template.planned(from: old) == planned else { continue }
            if let object = ObjectURL(old), let bucket = buckets[ItemKey.split(key).output] {
                if case .store(let error)? = writer?.perform([.delete(object, endpoint: bucket.endpoint)]).first ?? nil { throw error }
            } else {
                unlink(old)
            }
        }
    }
}

extension Recorder {
    /// Uploads the staged outputs of `done` events bound for a bucket and deletes a skipped item's
    /// object, in parallel, before the batch is recorded: an item is recorded done only once the
    /// store confirmed its object, and a crash in between costs one repeated PUT of the same bytes.
    /// An object the store refused fails its item (`write`); an item whose object was not written
    /// because the store refused the run or stayed unreachable is left out of the batch (it runs
    /// again next time) and the run stops.
    private func uploadingObjects(_ events: [ItemEvent]) -> [ItemEvent] {
        guard let writer else { return events }
        var changes: [ObjectWriter.Change] = [], places: [Int] = []
        for (index, event) in events.enumerated() {
            guard case .finished(let key, let path, let outcome) = event, let object = ObjectURL(path),
                  let bucket = buckets[ItemKey.split(key).output] else { continue }
            switch outcome {
            case .done(let rendered, _):
                changes.append(.put(object, endpoint: bucket.endpoint, file: rendered.temporary,
                                    mediaType: rendered.facts?.mediaType ?? "application/octet-stream",
                                    cacheControl: bucket.cacheControl, partSize: bucket.partSize))
            case .skipped: changes.append(.delete(object, endpoint: bucket.endpoint))
            default: continue
            }
            places.append(index)
        }
        guard !changes.isEmpty else { return events }
        var batch: [ItemEvent?] = events
        for (index, failure) in zip(places, writer.perform(changes)) {
            guard case .finished(let key, let path, let outcome) = events[index] else { continue }
            if case .done(let rendered, _) = outcome { unlink(rendered.temporary) }
            switch failure {
            case nil: TestPause.at(TestPause.recorderUploaded, subject: path)
            case .object(let reason)?: batch[index] = .finished(key: key, outputPath: path, outcome: .failed(ItemFailure(.write, "\(path): \(reason)"), seconds: outcome.seconds))
            case .store(let error)?:
                batch[index] = nil
                fail(error)
            }
        }
        return batch.compactMap { $0 }
    }
}
