import Foundation
import Synchronization

/// The download stage: fetches every URL source once (however many sources and outputs use it),
/// revalidates cached originals, blacklists permanent failures, and hands sources that need work
/// to the image workers through a bounded queue.
final class RemoteStage: @unchecked Sendable {
    struct Counts: Sendable {
        var unchanged = 0
        var failed = 0
        /// Items handed to the image workers.
        var handedOver = 0
        var tasks = 0
    }

    private let job: Job
    private let planner: Planner
    /// Sources by URL, in plan order: one download feeds all of them.
    private let groups: [(url: String, sources: [PlannedSource])]
    private let state: PlanningState
    private let store: StateStore
    private let recorder: Recorder
    private let handoff: TaskQueue
    private let control: RunControl
    private let retryFailed: Bool
    private let downloadOnly: Bool
    private let firstTaskID: Int
    private let counts = Mutex(Counts())
    private let finished = DispatchSemaphore(value: 0)

    init(job: Job, planner: Planner, sources: [PlannedSource], state: PlanningState, store: StateStore,
         recorder: Recorder, handoff: TaskQueue, control: RunControl, retryFailed: Bool, downloadOnly: Bool,
         firstTaskID: Int) {
        self.job = job
        self.planner = planner
        var order: [String] = []
        var byURL: [String: [PlannedSource]] = [:]
        for source in sources {
            guard case .remote(let remote) = source.origin else { continue }
            if byURL[remote.url] == nil { order.append(remote.url) }
            byURL[remote.url, default: []].append(source)
        }
        groups = order.map { ($0, byURL[$0]!) }
        self.state = state
        self.store = store
        self.recorder = recorder
        self.handoff = handoff
        self.control = control
        self.retryFailed = retryFailed
        self.downloadOnly = downloadOnly
        self.firstTaskID = firstTaskID
    }

    var isEmpty: Bool { groups.isEmpty }

    func start() {
        let thread = Thread { [self] in
            run()
            handoff.close()
            finished.signal()
        }
        thread.name = "runner.downloads"
        thread.start()
    }

    /// Items of every URL source the stage was given.
    var totalItems: Int { groups.reduce(0) { $0 + $1.sources.reduce(0) { $0 + $1.items.count } } }

    /// Waits for the stage to end and returns its counts.
    func wait() -> Counts {
        if !groups.isEmpty { finished.wait() }
        return counts.withLock { $0 }
    }

    private func cacheFile(for sourceKey: String) -> String {
        job.remote.cacheDirectory + "/" + StableHash.hex(sourceKey)
    }

    private func run() {
        var cursor = 0
        var pendingGroups: [String: Int] = [:]
        let capacity = 2 * job.concurrency.process + job.remote.downloads
        let downloader = Downloader(settings: job.remote)
        downloader.run(
            next: {
                guard cursor < groups.count else { return nil }
                let group = groups[cursor]
                pendingGroups[group.url] = cursor
                cursor += 1
                return request(for: group.sources[0], url: group.url)
            },
            canStart: { handoff.count < capacity },
            shouldStop: { control.phase != .running },
            deliver: { request, result in
                guard let index = pendingGroups.removeValue(forKey: request.url) else { return }
                resolve(groups[index].url, groups[index].sources, result)
            })
    }

    private func request(for source: PlannedSource, url: String) -> DownloadRequest {
        let destination = cacheFile(for: source.key)
        let cached = state.originals[source.key].flatMap { FileManager.default.fileExists(atPath: destination) ? $0 : nil }
        var headers = job.remote.headers
        if case .remote(let remote) = source.origin { headers.merge(remote.headers) { $1 } }
        return DownloadRequest(url: url, headers: headers, etag: cached?.etag, lastModified: cached?.lastModified,
                               destination: destination)
    }

    private func resolve(_ url: String, _ sources: [PlannedSource], _ result: DownloadResult) {
        let now = Date().timeIntervalSince1970
        let primary = cacheFile(for: sources[0].key)
        switch result {
        case .failed(let failure, let attempts):
            var message = failure.description
            if failure.isTransient {
                message += " (after \(attempts) attempts; retried next run)"
            } else {
                message += " (blacklisted)"
                try? store.blacklist(url: url, kind: failure.kind, status: failure.httpStatus, message: failure.description)
            }
            let itemFailure = ItemFailure(.download, message)
            let events = sources.flatMap { source in
                source.items.map { ItemEvent.finished(key: $0.key, outputPath: $0.outputPath, outcome: .failed(itemFailure, duration: 0)) }
            }
            recorder.record(events)
            counts.withLock { $0.failed += events.count }
        case .fetched(let etag, let lastModified, let contentHash, let size):
            if retryFailed { try? store.unblock([url]) }
            for source in sources {
                let file = cacheFile(for: source.key)
                if file != primary { unlink(file); link(primary, file) }
                try? store.saveOriginal(CachedOriginal(sourceKey: source.key, url: url, file: file, etag: etag,
                                                       lastModified: lastModified, contentHash: contentHash, size: size,
                                                       fetchedAt: now, validatedAt: now, usedAt: now))
                dispatch(source, identity: .content(contentHash), file: file)
            }
        case .notModified:
            if retryFailed { try? store.unblock([url]) }
            for source in sources {
                guard var original = state.originals[source.key] else { continue }
                original.validatedAt = now
                original.usedAt = now
                try? store.saveOriginal(original)
                dispatch(source, identity: .content(original.contentHash), file: cacheFile(for: source.key))
            }
        }
    }

    /// With the content known: items whose outputs are current are done again; the rest go to a worker.
    private func dispatch(_ source: PlannedSource, identity: SourceIdentity, file: String) {
        var keys: [String] = []
        var fingerprints: [String] = []
        var requests: [ImagePipeline.Request] = []
        var unchanged: [ItemEvent] = []
        for var item in source.items {
            item.fingerprint = planner.fingerprint(.success(identity), output: item.outputIndex)
            if planner.isUpToDate(item, ledger: state.ledger) {
                unchanged.append(.unchanged(key: item.key, outputPath: item.outputPath, fingerprint: item.fingerprint))
            } else {
                keys.append(item.key)
                fingerprints.append(item.fingerprint)
                requests.append(ImagePipeline.Request(outputIndex: item.outputIndex, path: item.outputPath))
            }
        }
        if !unchanged.isEmpty {
            recorder.record(unchanged)
            counts.withLock { $0.unchanged += unchanged.count }
        }
        // Download-only: the original is cached and revalidated; its items stay pending (not started).
        if !requests.isEmpty && !downloadOnly {
            let id = firstTaskID + counts.withLock { counts in
                counts.handedOver += requests.count
                counts.tasks += 1
                return counts.tasks
            }
            handoff.push(ScheduledTask(task: WorkerTask(id: id, source: file, requests: requests), keys: keys,
                                       fingerprints: fingerprints))
        }
    }
}
