internal import CCurl
import Foundation
import Support
import JobFile
import Planning

/// One source to fetch into the originals cache.
package struct DownloadRequest: Sendable {
    /// What to fetch: its kind says what to send and what a failed response means.
    package let source: any FetchedSource
    /// Validators of the cached original, for a conditional request.
    package let etag: String?
    package let lastModified: String?
    /// The cache file the original goes to, complete and verified, or not at all.
    package let destination: String
}

package enum DownloadResult: Sendable {
    case fetched(etag: String?, lastModified: String?, contentHash: String, size: Int)
    /// 304: the cached original is still current.
    case notModified
    case failed(DownloadFailure, attempts: Int)
}

/// One run's downloads, with libcurl's multi interface on the calling thread: one connection pool, HTTP/2
/// multiplexing where the server offers it, at most `downloads` transfers at once and `perHost` per host,
/// transient failures retried with backoff and jitter. The transfer thread only moves bytes (a body beyond
/// `memoryLimit` spills to its temporary file as it arrives); store threads write, hash, fsync and rename each
/// verified body, so a cached original is never partial under its name and no transfer waits for the disk.
package final class Downloader {
    /// Bodies up to this size are buffered in memory until their transfer ends.
    package static let memoryLimit = 1 << 20
    /// Threads that write, hash, fsync and rename finished bodies.
    package static let storeThreads = 4
    /// Most bodies a store thread takes at once: they are hashed together (see `StableHash.contentHashes`).
    package static let storeBatch = 4

    let settings: RemoteSettings
    let userAgent: String
    /// The multi handle every transfer is added to: its connection pool.
    let multi: UnsafeMutableRawPointer
    private let next: () -> DownloadRequest?
    private let canStart: () -> Bool
    private let deliver: (DownloadRequest, DownloadResult) -> Void
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var perHost: [String: Int] = [:]
    private var waiting: [(attempt: Attempt, due: Double)] = []
    private var exhausted = false
    /// Bodies handed to the store threads and not yet collected: at most `downloads`, so the
    /// memory and temporary files they hold stay bounded when the disk is slow.
    private var storing = 0
    /// Emptied body buffers, reused so that each body is not copied into fresh pages.
    private var spareBuffers: [[UInt8]] = []
    private let store: OriginalStore

    /// `next` gives the requests, `canStart` applies back-pressure (the hand-off to image workers is
    /// full), and `deliver` gets each request's final result, on the thread that runs.
    package init(settings: RemoteSettings, next: @escaping () -> DownloadRequest?, canStart: @escaping () -> Bool,
                 deliver: @escaping (DownloadRequest, DownloadResult) -> Void) {
        (self.settings, self.next, self.canStart, self.deliver) = (settings, next, canStart, deliver)
        userAgent = "runner/\(RunnerVersion.string)"
        multi = curl_multi_init()
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, settings.perHost)
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, settings.downloads)
        store = OriginalStore(threads: min(Self.storeThreads, settings.downloads), waking: multi)
    }

    deinit {
        active.removeAll()  // every transfer's handle is gone before the pool
        curl_multi_cleanup(multi)
    }

    /// Runs until `next` is exhausted and every transfer has ended, or `shouldStop` says so.
    /// After a stop, bodies already received are still stored and delivered; transfers in flight are abandoned.
    package func run(shouldStop: () -> Bool) {
        while !shouldStop() {
            collectStored()
            admit()
            if isFinished { break }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            // A transfer ended: admit the next one at once. Nothing in flight, nothing waiting and
            // nothing left: the loop ends at the top, without sleeping.
            if readEnded() || isFinished { continue }
            // Sleep until curl has something, a store thread finishes, a retry falls due, or
            // 100 ms pass (to notice a stop).
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, Int32(min(secondsToNextRetry, 0.1) * 1000), &ready)
        }
        stop()
    }

    /// Fetches one source into `destination` with the job's HTTP settings (timeouts, retries, size
    /// limit, the check that the body is an image), unconditionally and outside the originals
    /// cache: `runner preview`.
    package static func fetch(_ source: any FetchedSource, to destination: String, settings: RemoteSettings) -> DownloadResult {
        var request: DownloadRequest? = DownloadRequest(source: source, etag: nil, lastModified: nil, destination: destination)
        var result: DownloadResult?
        // The one request, handed out once.
        let next = { () -> DownloadRequest? in
            defer { request = nil }
            return request
        }
        Downloader(settings: settings, next: next, canStart: { true }, deliver: { _, delivered in result = delivered }).run(shouldStop: { false })
        return result ?? .failed(DownloadFailure(reason: .transfer(.local), detail: "the transfer ended without a result"), attempts: 0)
    }

    private var isFinished: Bool { active.isEmpty && waiting.isEmpty && exhausted && storing == 0 }

    private var secondsToNextRetry: Double {
        waiting.map(\.due).min().map { max(0, $0 - Date().timeIntervalSince1970) } ?? 0.1
    }

    /// Concludes the bodies the store threads have finished with.
    private func collectStored() {
        for body in store.collect() {
            storing -= 1
            if spareBuffers.count < settings.downloads, let buffer = body.takeBuffer() { spareBuffers.append(buffer) }
            conclude(body.attempt, body.result)
        }
    }

    /// Admits waiting requests first (due retries, or new ones whose host was full), then new
    /// requests, within the global and per-host caps. New requests are pulled only while few
    /// wait, so a list of one host's URLs is never read ahead into memory.
    private func admit() {
        let now = Date().timeIntervalSince1970
        while active.count < settings.downloads && storing < settings.downloads && canStart() {
            if let index = waiting.firstIndex(where: { $0.due <= now && perHost[$0.attempt.host, default: 0] < settings.perHost }) {
                start(waiting.remove(at: index).attempt)
                continue
            }
            guard waiting.count < settings.downloads, !exhausted else { break }
            guard let request = next() else { exhausted = true; break }
            let attempt = Attempt(request: request, host: URLComponents(string: request.source.url)?.host ?? "", number: 1)
            if perHost[attempt.host, default: 0] >= settings.perHost { waiting.append((attempt, now)) } else { start(attempt) }
        }
    }

    /// Takes the transfers curl has finished; true if any ended.
    private func readEnded() -> Bool {
        var queued: Int32 = 0
        var ended = false
        while let message = curl_multi_info_read(multi, &queued) {
            ended = true
            guard ccurl_message_is_done(message) != 0, let easy = ccurl_message_handle(message),
                  let transfer = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            perHost[transfer.attempt.host, default: 1] -= 1
            switch transfer.finish(ccurl_message_result(message)) {
            case .ended(let result): conclude(transfer.attempt, result)
            case .store(let body):
                storing += 1
                store.submit(body)
            }
        }
        return ended
    }

    /// Stopped (or done): transfers in flight are abandoned; bodies already received finish
    /// storing and stored ones are delivered; failed ones are not retried.
    private func stop() {
        for easy in active.keys { curl_multi_remove_handle(multi, easy) }
        store.close()
        for body in store.collect() {
            if case .fetched = body.result { deliver(body.attempt.request, body.result) }
        }
    }

    private func start(_ attempt: Attempt) {
        do {
            let transfer = try Transfer(attempt, settings: settings, userAgent: userAgent, buffer: spareBuffers.popLast() ?? [])
            active[transfer.connection.easy] = transfer
            perHost[attempt.host, default: 0] += 1
            curl_multi_add_handle(multi, transfer.connection.easy)
        } catch {
            deliver(attempt.request, .failed(error, attempts: attempt.number))
        }
    }

    /// A transient failure waits for its retry; anything else is final.
    private func conclude(_ attempt: Attempt, _ result: DownloadResult) {
        if case .failed(let failure, _) = result, failure.isTransient, attempt.number < settings.retry.attempts {
            let delay = settings.retry.delay(after: attempt.number, retryAfter: failure.retryAfter)
            let retry = Attempt(request: attempt.request, host: attempt.host, number: attempt.number + 1)
            waiting.append((retry, Date().timeIntervalSince1970 + delay))
        } else {
            deliver(attempt.request, result)
        }
    }

    /// Creates (truncates) a temporary file for reading and writing, creating its folder if missing.
    package static func createTemporary(_ path: String) -> Int32 {
        var descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if descriptor < 0 && errno == ENOENT {
            try? FileManager.default.createDirectory(atPath: Paths.directory(of: path), withIntermediateDirectories: true)
            descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        }
        return descriptor
    }
}

/// One try at a request: the host whose cap it counts against, and which try it is (1 up).
struct Attempt: Sendable {
    let request: DownloadRequest
    let host: String
    let number: Int
}
