import Foundation
import Synchronization
import Support
import Model
import JobFile
import Planning
import State
import Output

/// The download stage: fetches every URL of the run's spool once (however many sources and outputs
/// use it), revalidates cached originals (a fresh one without a request), blacklists permanent
/// failures, and hands sources that need work to the image workers through the bounded queue.
package final class RemoteStage: @unchecked Sendable {
    private let job: Job
    private let classifier: Classifier
    private let sources: PlannedSources
    /// URLs that more than one source names: their results are kept for sources that come later.
    private let repeatedURLs: DigestSet
    private let store: StateStore
    private let recorder: Recorder
    private let handoff: TaskQueue
    private let control: RunControl
    private let retryFailed: Bool
    private let downloadOnly: Bool
    /// Says something once to the person running the job (an origin serving stale).
    private let notice: @Sendable (String) -> Void
    /// Origins already said to be failing this run, so each is said once.
    private var staleOrigins: Set<String> = []
    private let finished = DispatchSemaphore(value: 0)
    /// What stopped the stage early: a state write that failed, a damaged plan file.
    private let failure = Mutex<(any Error)?>(nil)

    package init(job: Job, classifier: Classifier, sources: PlannedSources, repeatedURLs: DigestSet, store: StateStore,
         recorder: Recorder, handoff: TaskQueue, control: RunControl, retryFailed: Bool, downloadOnly: Bool,
         notice: @escaping @Sendable (String) -> Void) {
        (self.notice, self.job, self.classifier, self.sources) = (notice, job, classifier, sources)
        (self.repeatedURLs, self.store, self.recorder, self.handoff) = (repeatedURLs, store, recorder, handoff)
        (self.control, self.retryFailed, self.downloadOnly) = (control, retryFailed, downloadOnly)
    }

    package var isEmpty: Bool { sources.count == 0 }

    package func start() {
        let thread = Thread { [self] in
            run()
            handoff.close()
            finished.signal()
        }
        thread.name = "runner.downloads"
        thread.start()
    }

    /// Waits for the stage to end; throws what stopped it early, if anything did.
    package func wait() throws {
        if !isEmpty { finished.wait() }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Stops handing out work after an error that must not pass silently (the run then ends with it).
    private func fail(_ error: any Error) {
        failure.withLock { $0 = $0 ?? error }
        control.stop(for: .failure(error))
    }

    private func cacheFile(for sourceKey: String) -> String {
        job.remote.cacheDirectory + "/" + StableHash.hex(sourceKey)
    }

    private func run() {
        // Each URL's download in flight: the source that asked, and the others that wait on it.
        var fetching: [String: (primary: PlannedSource, followers: [PlannedSource])] = [:]
        var settled: [String: (primary: PlannedSource, result: DownloadResult)] = [:]
        var freshOriginals: [String] = []
        defer { touch(&freshOriginals) }
        let capacity = 2 * job.concurrency.process + job.remote.downloads
        Downloader(
            settings: job.remote,
            next: { [self] in
                while let source = nextSource() {
                    guard let fetched = source.kind.fetched else { continue }
                    if let reason = source.blockedReason {
                        recorder.record(source.finished(.blocked(reason: reason)))
                    } else if let original = source.cachedOriginal, source.identity == fetched.identity(of: original),
                              access(original.file, R_OK) == 0 {
                        // Planning found the cached original current (for a URL: fresh within `revalidate`): no request.
                        freshOriginals.append(source.key)
                        if freshOriginals.count >= 1_000 { touch(&freshOriginals) }
                        dispatch(source, identity: source.identity, file: original.file)
                    } else if fetching[fetched.location] != nil {
                        fetching[fetched.location]!.followers.append(source)
                    } else if let earlier = settled[fetched.location] {
                        resolve(fetched, primary: earlier.primary, sources: [source], earlier.result, firstTime: false)
                    } else {
                        fetching[fetched.location] = (source, [])
                        let destination = cacheFile(for: source.key)
                        let cached = source.cachedOriginal.flatMap { FileManager.default.fileExists(atPath: destination) ? $0 : nil }
                        return DownloadRequest(source: fetched, etag: cached?.etag, lastModified: cached?.lastModified, destination: destination)
                    }
                }
                return nil
            },
            canStart: { [self] in handoff.count < capacity },
            deliver: { [self] request, result in
                let address = request.source.location
                guard let fetch = fetching.removeValue(forKey: address) else { return }
                if repeatedURLs.contains(address) { settled[address] = (fetch.primary, result) }
                resolve(request.source, primary: fetch.primary, sources: [fetch.primary] + fetch.followers, result, firstTime: true)
            }).run(shouldStop: { control.phase != .running })
    }

    private func nextSource() -> PlannedSource? {
        do { return try sources.next(recording: recorder.record) } catch { fail(error); return nil }
    }

    /// Marks cached originals used now (the cache trims the least recently used).
    private func touch(_ keys: inout [String]) {
        guard !keys.isEmpty else { return }
        do { try store.touchOriginals(keys) } catch { fail(error) }
        keys.removeAll()
    }

    /// Settles `sources` of one URL with the result of the download `primary` asked for.
    private func resolve(_ fetched: any FetchedSource, primary: PlannedSource, sources: [PlannedSource], _ result: DownloadResult,
                         firstTime: Bool) {
        let url = fetched.location
        let now = Date().timeIntervalSince1970
        let primaryFile = cacheFile(for: primary.key)
        let content: CachedOriginal
        switch result {
        case .failed(let failure, let attempts):
            // The store refuses the run as set up: one message ends it; the items are tried next run.
            if case .httpStatus(_, .refused(let refusal)) = failure.reason { return fail(refusal) }
            let (stale, failing) = staleIfError(failure, sources: sources, now: now)
            if !stale.isEmpty { serveStale(fetched, stale, failure) }
            guard !failing.isEmpty else { return }
            // A URL some source still serves stale from is never blacklisted: that would block it too.
            let blacklisted = stale.isEmpty ? failure.blacklistReason : nil
            let message = failure.description + (failure.isTransient ? " (after \(attempts) attempts; retried next run)"
                : blacklisted == nil ? " (retried next run)" : " (blacklisted)")
            let events: [ItemEvent] = firstTime ? blacklisted.map { [.blacklisted(url: url, reason: $0, message: failure.description)] } ?? [] : []
            // A body this machine could not store is a local write failure, not the server's.
            let kind: ItemFailure.Kind = failure.reason == .transfer(.local) ? .write : .download
            let outcome = ItemOutcome.failed(ItemFailure(kind, message), seconds: 0)
            recorder.record(events + failing.flatMap { $0.finished(outcome) })
            return
        case .fetched(let etag, let lastModified, let contentHash, let size):
            content = CachedOriginal(sourceKey: primary.key, url: url, file: primaryFile, etag: etag, lastModified: lastModified,
                                     contentHash: contentHash, size: size, fetchedAt: now, validatedAt: now, usedAt: now)
        case .notModified:
            // A conditional request is sent only for a source with a cached original.
            guard let original = primary.cachedOriginal else { return }
            content = original
        }
        if (retryFailed || primary.retriesBlacklisted) && firstTime { recorder.record([.unblocked(url: url)]) }
        for source in sources {
            let file = cacheFile(for: source.key)
            do {
                // Each source keys its own cached original; sources sharing a URL share its bytes (`file`, a
                // second name of the primary's, replaces what was there).
                if file != primaryFile && (unlink(file) != 0 && errno != ENOENT || link(primaryFile, file) != 0) {
                    throw ItemFailure(.write, "cannot link the cached original \(file): \(String(cString: strerror(errno)))")
                }
                try store.saveOriginal(CachedOriginal(sourceKey: source.key, url: url, file: file, etag: content.etag,
                                                      lastModified: content.lastModified, contentHash: content.contentHash,
                                                      size: content.size, fetchedAt: content.fetchedAt, validatedAt: now,
                                                      usedAt: now))
            } catch let failure as ItemFailure {
                recorder.record(source.finished(.failed(failure, seconds: 0)))
                continue
            } catch {
                return fail(error)
            }
            dispatch(source, identity: fetched.identity(of: content), file: file)
        }
    }

    /// The sources a transiently failed revalidation leaves served by their cached original (RFC
    /// 5861's stale-if-error: validated within `http.staleIfError`, its file still there), and
    /// the rest, which fail.
    private func staleIfError(_ failure: DownloadFailure, sources: [PlannedSource], now: Double)
        -> (stale: [(PlannedSource, CachedOriginal)], failing: [PlannedSource]) {
        var stale: [(PlannedSource, CachedOriginal)] = [], failing: [PlannedSource] = []
        for source in sources {
            if failure.isOriginFailing, let original = source.cachedOriginal, now - original.validatedAt <= job.remote.staleIfError,
               access(original.file, R_OK) == 0 {
                stale.append((source, original))
            } else {
                failing.append(source)
            }
        }
        return (stale, failing)
    }

    /// Keeps stale sources' up-to-date outputs up to date, counted not revalidated; renders their
    /// other outputs from the cached original. Said once per origin.
    private func serveStale(_ fetched: any FetchedSource, _ sources: [(PlannedSource, CachedOriginal)], _ failure: DownloadFailure) {
        let origin = URLComponents(string: fetched.url).map { ($0.host ?? "") + ($0.port.map { ":\($0)" } ?? "") } ?? fetched.url
        if staleOrigins.insert(origin).inserted {
            notice("\(origin): \(failure); its cached originals serve unrevalidated (http.staleIfError "
                + "\(Durations.describe(job.remote.staleIfError)) after their last revalidation); runner status shows since when")
        }
        do { try store.markNotRevalidated(sources.map(\.0.key), reason: failure.description) } catch { return fail(error) }
        for (source, original) in sources {
            dispatch(source, identity: fetched.identity(of: original), file: original.file, revalidated: false)
        }
    }

    /// With the content known: items whose outputs are current are done again, items that failed
    /// on this same content stay failed; the rest go to a worker (or, with --download-only, stay pending).
    private func dispatch(_ source: PlannedSource, identity: SourceIdentity, file: String, revalidated: Bool = true) {
        var work: [PlannedItem] = []
        var settled: [ItemEvent] = []
        let outputStats = FolderStat(folders: source.items.count)
        for var item in source.items {
            item.fingerprint = classifier.fingerprint(identity, output: item.outputIndex)
            if item.isUpToDate(in: job.outputs[item.outputIndex].destination, statting: outputStats) {
                settled.append(revalidated ? .unchanged(key: item.key, outputPath: item.currentPath, fingerprint: item.fingerprint)
                    : .notRevalidated(key: item.key, outputPath: item.currentPath, fingerprint: item.fingerprint))
            } else if item.isKnownFailure {
                settled.append(.stillFailed(key: item.key, outputPath: item.outputPath))
            } else {
                work.append(item)
            }
        }
        recorder.record(settled)
        // Derived values are decided again now that the content is known.
        let derivation = classifier.derivation(of: source, identity: identity)
        if !work.isEmpty || derivation != nil, !downloadOnly {
            handoff.push(ScheduledTask(file: file, url: source.location, items: work, of: source,
                                       fingerprint: classifier.derivationFingerprint(identity), derivation: derivation))
        }
    }
}
