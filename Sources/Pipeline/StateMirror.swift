import Foundation
import Synchronization
import Support
import Model
import JobFile
import State
import ObjectStore
import Reporting

/// A run's state database kept in the job's `stateBucket` between runs, for a pod with no disk of
/// its own. The shard's lease comes first, so a second run of the shard stops having written nothing;
/// then the bucket's copy replaces the local one unless it is that very version, and at checkpoints
/// and at the end a snapshot goes back over the version fetched. A run killed between checkpoints
/// loses only the records since the last: their outputs are made again, the same bytes.
final class StateMirror: Sendable {
    private let mirror: ObjectMirror
    /// The shard's lease, taken before anything is written here (even the lock file), given back once the run is over.
    let lease: StateLease
    let statePath: String
    private let checkpoint: Double
    /// The ETag of the version the local database was last fetched as or written as, beside it.
    private var notePath: String { statePath + ".bucket-etag" }
    private let pushing = Mutex(())

    convenience init?(_ job: Job) {
        guard let settings = job.stateBucket else { return nil }
        self.init(settings, statePath: job.statePath, retry: job.remote.retry)
    }

    /// The database at `statePath` kept in the bucket's state folder under its own name.
    init(_ settings: StateBucketSettings, statePath: String, retry: RetryPolicy) {
        let object = settings.object(for: statePath)
        mirror = ObjectMirror(endpoint: settings.endpoint, object: object, retry: retry)
        lease = StateLease(ObjectMirror(endpoint: settings.endpoint, object: ObjectURL(bucket: object.bucket, key: object.key + ".lease"),
                                        retry: retry))
        (self.statePath, checkpoint) = (statePath, settings.checkpoint)
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
            switch try mirror.store(from: snapshot, over: AtomicFile.note(at: notePath), mediaType: "application/vnd.sqlite3") {
            case .stored(let etag): try note(etag)
            case .conflict: throw StateBucketConflict(object: mirror.object.description)
            }
        }
    }

    /// Pushes and renews the lease every `checkpoint` seconds until the timer is cancelled; `onFailure` hears a failure.
    /// The lease is renewed on the same timer, every `StateLease.renewal` seconds at the most.
    func checkpoints(_ store: StateStore, onFailure: @escaping @Sendable (any Error) -> Void) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let tick = min(checkpoint, StateLease.renewal)
        let lastPush = Mutex(Date())
        timer.schedule(deadline: .now() + tick, repeating: tick)
        timer.setEventHandler { [self] in
            do {
                try lease.renew()
                guard lastPush.withLock({ $0.timeIntervalSinceNow <= tick / 2 - checkpoint }) else { return }
                try push(store)
                lastPush.withLock { $0 = Date() }
            } catch { onFailure(error) }
        }
        timer.resume()
        return timer
    }

    /// The names of the job's databases the bucket keeps (its own, each shard's under any count).
    static func databases(of job: Job, in settings: StateBucketSettings) throws -> [String] {
        var names: [String] = []
        let listing = BucketListing(endpoint: settings.endpoint, bucket: settings.folder.bucket, prefix: settings.folder.key, retry: job.remote.retry)
        try listing.objects { listed in
            let name = String(listed.key.dropFirst(settings.folder.key.count))
            if JobStateLayout.isDatabase(named: name, jobStatePath: job.jobStatePath) { names.append(name) }
        }
        return names
    }

    /// Brings here, beside the job's state, the bucket's databases of the job's other layouts
    /// (unsharded, or under another shard count), unless the copy here is current: what a run's
    /// planning reads to find work already done under them.
    static func pullOtherLayouts(of job: Job) throws {
        guard let settings = job.stateBucket else { return }
        let folder = Paths.directory(of: job.jobStatePath)
        for name in try databases(of: job, in: settings) where !JobStateLayout.isSameLayout(named: name, jobStatePath: job.jobStatePath, as: job.shard) {
            try StateMirror(settings, statePath: folder + "/" + name, retry: job.remote.retry).pull()
        }
    }

    private func note(_ etag: String) throws {
        do { try AtomicFile.write(Data(etag.utf8), to: notePath) } catch {
            throw RunFileUnwritable(file: "the version of the state in the bucket", path: notePath, reason: error.message)
        }
    }
}

/// A shard's hold on its state in the bucket: an object naming the holder, lapsing `lapse` seconds after
/// it was last renewed (a pod killed on another node holds its shard no longer). Created only where there
/// is none (`If-None-Match: *`), renewed and taken over only over the version read (`If-Match`): taken over
/// once lapsed (a minute's margin for clocks) or when its holder is a gone process of this machine.
final class StateLease: Sendable {
    private struct Holder: Codable {
        let host: String
        let pid: Int32
        /// Seconds since 1970.
        let until: Double
    }

    private let object: ObjectMirror
    private let held = Mutex<String?>(nil)

    /// How often a run renews its lease, and how long one lasts unrenewed.
    static let renewal = 30.0, lapse = 120.0

    init(_ object: ObjectMirror) { self.object = object }

    private static let host = ProcessInfo.processInfo.hostName

    /// This process's hold, written only over `etag` (nil: only where there is none).
    private func store(over etag: String?) throws -> ObjectMirror.Stored {
        let holder = Holder(host: Self.host, pid: getpid(), until: Date().timeIntervalSince1970 + Self.lapse)
        return try object.store(Array(try JSONEncoder().encode(holder)), over: etag, mediaType: "application/json")
    }

    /// `again`: a lease given back between the refused create and the read is created once more.
    func take(again: Bool = true) throws {
        if case .stored(let etag) = try store(over: nil) { return held.withLock { $0 = etag } }
        guard let (bytes, etag) = try object.read() else {
            guard again else { throw StateLeaseHeld(object: object.object.description, holder: nil, until: nil) }
            return try take(again: false)
        }
        let holder = try? JSONDecoder().decode(Holder.self, from: Data(bytes))
        let lapsed = holder.map { $0.until + 60 < Date().timeIntervalSince1970 } ?? true
        let goneHere = holder.map { $0.host == Self.host && kill($0.pid, 0) != 0 && errno == ESRCH } ?? false
        guard lapsed || goneHere, case .stored(let taken) = try store(over: etag) else {
            throw StateLeaseHeld(object: object.object.description, holder: holder.map { "\($0.host), pid \($0.pid)" },
                                 until: holder.map { Date(timeIntervalSince1970: $0.until) })
        }
        held.withLock { $0 = taken }
    }

    func renew() throws {
        guard let etag = held.withLock({ $0 }) else { return }
        guard case .stored(let renewed) = try store(over: etag) else {
            throw StateBucketConflict(object: object.object.description)
        }
        held.withLock { $0 = renewed }
    }

    func release() {
        guard held.withLock({ exchange(&$0, with: nil) }) != nil else { return }
        try? object.delete()
    }
}

/// Another run of this shard holds its state in the bucket: this one stops before any work.
struct StateLeaseHeld: Error, ExitCoded, CustomStringConvertible {
    let object: String
    let holder: String?
    let until: Date?
    var exitCode: Int32 { ExitStatus.locked }
    var description: String {
        "\(object): another run of this shard (\(holder ?? "unknown")) holds its state" + (until.map { " until \(Date.ISO8601FormatStyle().format($0))" } ?? "")
            + ": this run stops before any work; run it once that run is over"
    }
}

/// Another run of this shard wrote the state in the bucket since this one fetched it, or took its
/// lease after it lapsed: this run's records are not kept there.
struct StateBucketConflict: Error, ExitCoded, CustomStringConvertible {
    let object: String
    var exitCode: Int32 { ExitStatus.locked }
    var description: String {
        "\(object): another run of this shard wrote the state here since this run fetched it (two pods of one index?): "
            + "this run stops and its records are not kept; its outputs stay"
    }
}

extension JobRunner {
    /// Runs `body` with the job's state as its `stateBucket` holds it (every database of the job's
    /// layouts, fetched read-only into a temporary folder, removed after), else as it is here: what
    /// the commands that only read see. Nothing is written where the state is kept.
    public static func readingState<Result>(of job: Job, _ body: (Job) throws -> Result) throws -> Result {
        guard let copy = try BucketStateCopy(job) else { return try body(job) }
        return try body(copy.job)
    }

    /// Runs `body` on the job's state to change it (`unblock`, `migrate`, `prune --delete`): with a
    /// `stateBucket`, each database's lease is taken and its copy fetched, and after `body` each is
    /// written back only over the version fetched (another writer in between: exit 75).
    public static func editingState<Result>(of job: Job, _ body: (Job) throws -> Result) throws -> Result {
        guard let copy = try BucketStateCopy(job, leasing: true) else { return try body(job) }
        defer { copy.release() }
        let result = try body(copy.job)
        try copy.pushBack()
        return result
    }
}

/// The job's databases in its `stateBucket`, each fetched through a `StateMirror` (leased when they
/// are to be changed) into a temporary folder under its own name.
private final class BucketStateCopy {
    let job: Job
    private let folder: String
    private var mirrors: [StateMirror] = []

    init?(_ job: Job, leasing: Bool = false) throws {
        guard let settings = job.stateBucket else { return nil }
        folder = NSTemporaryDirectory() + "runner-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        self.job = job.withState(in: folder)
        for name in try StateMirror.databases(of: job, in: settings) {
            let mirror = StateMirror(settings, statePath: folder + "/" + name, retry: job.remote.retry)
            mirrors.append(mirror)
            if leasing { try mirror.lease.take() }
            try mirror.pull()
        }
    }

    deinit {
        release()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Each database written back over the version fetched.
    func pushBack() throws {
        for mirror in mirrors {
            let store = try StateStore(path: mirror.statePath)
            defer { store.close() }
            try mirror.push(store)
        }
    }

    func release() {
        for mirror in mirrors { mirror.lease.release() }
    }
}
