internal import CCurl
import Foundation
import JobFile

/// One `run`'s transfers: those in flight, those waiting for a retry or for their host, and the
/// bodies being stored.
final class DownloadSession {
    private let downloader: Downloader
    private let settings: RemoteSettings
    private let next: () -> DownloadRequest?
    private let canStart: () -> Bool
    private let deliver: (DownloadRequest, DownloadResult) -> Void
    /// Transfers in flight, by their curl handle.
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

    init(downloader: Downloader, next: @escaping () -> DownloadRequest?, canStart: @escaping () -> Bool,
         deliver: @escaping (DownloadRequest, DownloadResult) -> Void) {
        (self.downloader, self.next, self.canStart, self.deliver) = (downloader, next, canStart, deliver)
        settings = downloader.settings
        store = OriginalStore(threads: min(Downloader.storeThreads, settings.downloads), wake: MultiWaker(multi: downloader.multi))
    }

    var isFinished: Bool { active.isEmpty && waiting.isEmpty && exhausted && storing == 0 }

    var secondsToNextRetry: Double {
        waiting.map(\.due).min().map { max(0, $0 - Date().timeIntervalSince1970) } ?? 0.1
    }

    /// Concludes the bodies the store threads have finished with.
    func collectStored() {
        for body in store.collect() {
            storing -= 1
            if spareBuffers.count < settings.downloads, let buffer = body.takeBuffer() { spareBuffers.append(buffer) }
            conclude(body.attempt, body.result)
        }
    }

    /// Admits waiting requests first (due retries, or new ones whose host was full), then new
    /// requests, within the global and per-host caps. New requests are pulled only while few
    /// wait, so a list of one host's URLs is never read ahead into memory.
    func admit() {
        let now = Date().timeIntervalSince1970
        while active.count < settings.downloads && storing < settings.downloads && canStart() {
            if let index = waiting.firstIndex(where: { $0.due <= now && perHost[$0.attempt.host, default: 0] < settings.perHost }) {
                start(waiting.remove(at: index).attempt)
                continue
            }
            guard waiting.count < settings.downloads, !exhausted else { break }
            guard let request = next() else { exhausted = true; break }
            let attempt = Attempt(request: request, host: Downloader.host(of: request.source.url), number: 1)
            if perHost[attempt.host, default: 0] >= settings.perHost { waiting.append((attempt, now)) } else { start(attempt) }
        }
    }

    /// Takes the transfers curl has finished; true if any ended.
    func readEnded() -> Bool {
        var queued: Int32 = 0
        var ended = false
        while let message = curl_multi_info_read(downloader.multi, &queued) {
            ended = true
            guard ccurl_message_is_done(message) != 0, let easy = ccurl_message_handle(message),
                  let transfer = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(downloader.multi, easy)
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
    func stop() {
        for easy in active.keys { curl_multi_remove_handle(downloader.multi, easy) }
        store.close()
        for body in store.collect() {
            if case .fetched = body.result { deliver(body.attempt.request, body.result) }
        }
    }

    private func start(_ attempt: Attempt) {
        do {
            let transfer = try Transfer(attempt, settings: settings, userAgent: downloader.userAgent, buffer: spareBuffers.popLast() ?? [])
            active[transfer.connection.easy] = transfer
            perHost[attempt.host, default: 0] += 1
            curl_multi_add_handle(downloader.multi, transfer.connection.easy)
        } catch {
            deliver(attempt.request, .failed(error, attempts: attempt.number))
        }
    }

    /// A transient failure waits for its retry; anything else is final.
    private func conclude(_ attempt: Attempt, _ result: DownloadResult) {
        if case .failed(let failure, _) = result, failure.isTransient, attempt.number < settings.retry.attempts {
            let delay = settings.retry.delay(after: attempt.number, retryAfter: failure.retryAfter)
            waiting.append((Attempt(request: attempt.request, host: attempt.host, number: attempt.number + 1), Date().timeIntervalSince1970 + delay))
        } else {
            deliver(attempt.request, result)
        }
    }
}

/// One try at a request: the host whose cap it counts against, and which try it is (1 up).
struct Attempt: Sendable {
    let request: DownloadRequest
    let host: String
    let number: Int
}
