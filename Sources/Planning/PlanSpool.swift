internal import CSystem
import Foundation
import Synchronization
import Support
import Model

/// The sources a run will work on, one JSON line each, written by the planning pass and read back in
/// order, so a run's memory does not grow with its length. Beside the state database (/tmp is often a
/// RAM disk), unlinked once opened: nothing to clean up, even after a crash.
package final class PlanSpool {
    private let descriptor: Int32
    private var pendingWrite = Data()
    private var count = 0

    package init(besideStateAt statePath: String) throws {
        descriptor = try unlinkedFile(in: Paths.directory(of: statePath), prefix: ".runner-plan-", what: "the plan file beside \(statePath)")
    }

    /// Closed by the reader once writing is finished, or here if it never was.
    private var handedOver = false

    deinit { if !handedOver { close(descriptor) } }

    package func append(_ source: PlannedSource) throws {
        pendingWrite.append(try JSONEncoder().encode(source))
        pendingWrite.append(UInt8(ascii: "\n"))
        count += 1
        if pendingWrite.count >= 1 << 20 { try flush() }
    }

    /// Ends writing; the returned reader reads the sources back but for the items `collided` names.
    package func finishWriting(collided: [String: ItemEvent] = [:]) throws -> PlannedSources {
        try flush()
        lseek(descriptor, 0, SEEK_SET)
        handedOver = true
        return PlannedSources(descriptor: descriptor, count: count, collided: collided)
    }

    private func flush() throws {
        if let failure = pendingWrite.withUnsafeBytes({ FileDescriptor.writeAll(descriptor, $0) }) {
            throw SpillFailure(description: "cannot write the plan file: \(String(cString: strerror(failure)))")
        }
        pendingWrite.removeAll(keepingCapacity: true)
    }
}

/// A finished plan spool, read back one source at a time by any number of threads.
package final class PlannedSources: Sendable {
    private let descriptor: Int32
    /// The reader's buffer and position: one reader at a time, by construction.
    private let channel: Mutex<LineChannel>
    package let count: Int
    private let collided: [String: ItemEvent]

    fileprivate init(descriptor: Int32, count: Int, collided: [String: ItemEvent]) {
        (self.descriptor, self.count, self.collided) = (descriptor, count, collided)
        channel = Mutex(LineChannel(input: descriptor, output: -1))
    }

    deinit { close(descriptor) }

    /// The next source with work, or nil after the last; `record` gets its collided items' events.
    package func next(recording record: ([ItemEvent]) -> Void) throws(SpillFailure) -> PlannedSource? {
        while var source = try read() {
            guard !collided.isEmpty else { return source }
            let events = source.items.compactMap { collided[$0.key] }
            guard !events.isEmpty else { return source }
            record(events)
            source.items.removeAll { collided[$0.key] != nil }
            if !source.items.isEmpty || source.derivation != nil { return source }
        }
        return nil
    }

    private func read() throws(SpillFailure) -> PlannedSource? {
        try channel.withLock { channel throws(SpillFailure) -> PlannedSource? in
            do throws(ChannelError) {
                return try channel.receive(PlannedSource.self)
            } catch {
                guard error != .closed else { return nil }
                throw SpillFailure(description: "the plan file is damaged: \(error)")
            }
        }
    }
}
