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

/// Fetches URLs with libcurl's multi interface on the calling thread: one connection pool,
/// HTTP/2 multiplexing where the server offers it, at most `downloads` transfers at once and
/// `perHost` per host, transient failures retried with backoff and jitter.
///
/// The transfer thread only moves bytes. A body up to `memoryLimit` stays in memory until its
/// transfer ends; a larger one spills to its temporary file as it arrives. A few store threads
/// then put each verified body into the cache: write (what is still in memory), start its
/// writeback, hash, fsync, and rename to its final name, so a cached original is never partial
/// under that name and no transfer waits for the disk.
package final class Downloader {
    /// Bodies up to this size are buffered in memory until their transfer ends.
    package static let memoryLimit = 1 << 20
    /// Threads that write, hash, fsync and rename finished bodies.
    package static let storeThreads = 4
    /// Most bodies a store thread takes at once: they are hashed together (see `StableHash.contentHashes`).
    package static let storeBatch = 4

    let settings: RemoteSettings
    let userAgent: String
    /// The multi handle every transfer of a `run` is added to: its connection pool.
    let multi: UnsafeMutableRawPointer

    package init(settings: RemoteSettings) {
        self.settings = settings
        userAgent = "runner/\(RunnerVersion.string)"
        multi = curl_multi_init()
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, settings.perHost)
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, settings.downloads)
    }

    deinit { curl_multi_cleanup(multi) }

    /// Runs until `next` is exhausted and every transfer has ended, or `shouldStop` says so.
    /// `canStart` applies back-pressure (the hand-off to image workers is full); `deliver` gets
    /// each request's final result, on this thread. After a stop, bodies already received are
    /// still stored and delivered; transfers in flight are abandoned.
    package func run(next: @escaping () -> DownloadRequest?, canStart: @escaping () -> Bool, shouldStop: () -> Bool,
                     deliver: @escaping (DownloadRequest, DownloadResult) -> Void) {
        let session = DownloadSession(downloader: self, next: next, canStart: canStart, deliver: deliver)
        while !shouldStop() {
            session.collectStored()
            session.admit()
            if session.isFinished { break }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            // A transfer ended: admit the next one at once. Nothing in flight, nothing waiting and
            // nothing left: the loop ends at the top, without sleeping.
            if session.readEnded() || session.isFinished { continue }
            // Sleep until curl has something, a store thread finishes, a retry falls due, or
            // 100 ms pass (to notice a stop).
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, Int32(min(session.secondsToNextRetry, 0.1) * 1000), &ready)
        }
        session.stop()
    }

    /// Fetches one source into `destination` with the job's HTTP settings (timeouts, retries, size
    /// limit, the check that the body is an image), unconditionally and outside the originals
    /// cache: `runner preview`.
    package func fetch(_ source: any FetchedSource, to destination: String) -> DownloadResult {
        var request: DownloadRequest? = DownloadRequest(source: source, etag: nil, lastModified: nil, destination: destination)
        var result: DownloadResult?
        run(next: { defer { request = nil }; return request }, canStart: { true }, shouldStop: { false },
            deliver: { _, delivered in result = delivered })
        return result ?? .failed(DownloadFailure(reason: .transfer(.local), detail: "the transfer ended without a result"), attempts: 0)
    }

    package static func host(of url: String) -> String { URLComponents(string: url)?.host ?? "" }

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
