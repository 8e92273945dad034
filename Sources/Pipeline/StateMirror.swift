import Foundation
import Synchronization
import Support
import Model
import JobFile
import State
import ObjectStore
import Reporting

/// A run's state database kept in the job's `stateBucket` between runs, for a machine (a pod)
/// with no disk of its own from one run to the next. Before the database opens, under the run
/// lock, the bucket's copy replaces the local one unless the local one is that very version (or
/// grew from it here); at checkpoints and at the end a snapshot goes back, written only over the
/// version fetched, so of two runs of one shard that started from it the second to write stops.
/// A run killed between checkpoints loses only the records since the last: their outputs are
/// made and written again, the same bytes.
final class StateMirror: Sendable {
    private let mirror: ObjectMirror
    private let statePath: String
    private let checkpoint: Double
    /// The ETag of the version the local database was last fetched as or written as, beside it.
    private var notePath: String { statePath + ".bucket-etag" }
    private let pushing = Mutex(())

    init?(_ job: Job) {
        guard let settings = job.stateBucket else { return nil }
        mirror = ObjectMirror(endpoint: settings.endpoint, object: settings.object(for: job.statePath), retry: job.remote.storeRetry)
        (statePath, checkpoint) = (job.statePath, settings.checkpoint)
    }

    /// Brings the bucket's version here unless the local database already is it.
    func pull() throws {
        let known = FileManager.default.fileExists(atPath: statePath) ? AtomicFile.note(at: notePath) : nil
        let fetched = statePath + ".fetched"
        switch try mirror.fetch(into: fetched, unless: known) {
        case .unchanged: break
        case .absent:
            // Nothing kept there yet (or it was deleted): the next write creates it, only if still absent.
            unlink(notePath)
        case .fetched(let etag):
            // A WAL left beside the old file would be replayed into the new one.
            for leftover in [statePath + "-wal", statePath + "-shm"] { unlink(leftover) }
            guard rename(fetched, statePath) == 0 else {
                throw RunFileUnwritable(file: "the state database fetched from \(mirror.object)", path: statePath,
                                        reason: String(cString: strerror(errno)))
            }
            try note(etag)
        }
    }

    /// Writes a snapshot of `store` to the bucket over the version last fetched or written here.
    func push(_ store: StateStore) throws {
        try pushing.withLock { _ in
            let snapshot = statePath + ".snapshot"
            defer { unlink(snapshot) }
            try store.snapshot(to: snapshot)
            switch try mirror.store(from: snapshot, over: AtomicFile.note(at: notePath)) {
            case .stored(let etag): try note(etag)
            case .conflict: throw StateBucketConflict(object: mirror.object.description)
            }
        }
    }

    /// Pushes every `checkpoint` seconds until the timer is cancelled; `onFailure` hears a failure.
    func checkpoints(_ store: StateStore, onFailure: @escaping @Sendable (any Error) -> Void) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + checkpoint, repeating: checkpoint)
        timer.setEventHandler { [self] in
            do { try push(store) } catch { onFailure(error) }
        }
        timer.resume()
        return timer
    }

    private func note(_ etag: String) throws {
        do { try AtomicFile.write(Data(etag.utf8), to: notePath) } catch {
            throw RunFileUnwritable(file: "the version of the state in the bucket", path: notePath, reason: error.message)
        }
    }
}

/// Another run of this shard wrote the state in the bucket since this one fetched it (two pods
/// of one index): this run's records are not kept there.
struct StateBucketConflict: Error, ExitCoded, CustomStringConvertible {
    let object: String
    var exitCode: Int32 { ExitStatus.locked }
    var description: String {
        "\(object): another run of this shard wrote the state here since this run fetched it (two pods of one index?): "
            + "this run stops and its records are not kept; its outputs stay"
    }
}
