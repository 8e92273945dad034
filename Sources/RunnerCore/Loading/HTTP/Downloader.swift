internal import CCurl
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One URL to fetch into the originals cache.
struct DownloadRequest: Sendable {
    let url: String
    /// `http.headers` plus the source's own; never logged or stored.
    let headers: [String: String]
    /// Validators of the cached original, for a conditional request.
    let etag: String?
    let lastModified: String?
    /// The cache file the original goes to, complete and verified, or not at all.
    let destination: String
}

enum DownloadResult: Sendable {
    case fetched(etag: String?, lastModified: String?, contentHash: String, size: Int)
    /// 304: the cached original is still current.
    case notModified
    case failed(DownloadFailure, attempts: Int)
}

/// Fetches URLs with libcurl's multi interface on the calling thread: one connection pool,
/// HTTP/2 multiplexing where the server offers it, at most `downloads` transfers at once and
/// `perHost` per host, transient failures retried with backoff and jitter.
final class Downloader {
    private let settings: RemoteSettings
    private let userAgent: String
    private let multi: UnsafeMutableRawPointer
    private let httpDate: DateFormatter

    /// curl_global_init is not thread-safe: done once, before any download thread starts.
    static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    init(settings: RemoteSettings) {
        _ = Self.globalInit
        self.settings = settings
        userAgent = "runner/\(RunnerVersion.string)"
        multi = curl_multi_init()
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, settings.perHost)
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, settings.downloads)
        httpDate = DateFormatter()
        httpDate.locale = Locale(identifier: "en_US_POSIX")
        httpDate.timeZone = TimeZone(identifier: "GMT")
        httpDate.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
    }

    deinit { curl_multi_cleanup(multi) }

    private struct Waiting {
        let request: DownloadRequest
        let host: String
        let attempt: Int
        let due: Double
    }

    /// Runs until `next` is exhausted and every transfer has ended, or `shouldStop` says so.
    /// `canStart` applies back-pressure (the hand-off to image workers is full); `deliver` gets
    /// each request's final result, on this thread.
    func run(next: () -> DownloadRequest?, canStart: () -> Bool, shouldStop: () -> Bool,
             deliver: (DownloadRequest, DownloadResult) -> Void) {
        var active: [ObjectIdentifier: Transfer] = [:]
        var perHost: [String: Int] = [:]
        var waiting: [Waiting] = []
        var exhausted = false

        func start(_ request: DownloadRequest, attempt: Int) {
            do {
                let transfer = try Transfer(request: request, attempt: attempt, settings: settings, userAgent: userAgent)
                active[ObjectIdentifier(transfer)] = transfer
                perHost[transfer.host, default: 0] += 1
                curl_multi_add_handle(multi, transfer.easy)
            } catch let failure as DownloadFailure {
                deliver(request, .failed(failure, attempts: attempt))
            } catch {
                deliver(request, .failed(DownloadFailure(reason: .other(code: -1), detail: "\(error)"), attempts: attempt))
            }
        }

        while !shouldStop() {
            let now = Date().timeIntervalSince1970
            // Admit: waiting requests first (due retries, or new ones whose host was full), then new
            // requests, within the global and per-host caps. New requests are pulled only while few
            // wait, so a list of one host's URLs is never read ahead into memory.
            while active.count < settings.downloads && canStart() {
                if let index = waiting.firstIndex(where: { $0.due <= now && perHost[$0.host, default: 0] < settings.perHost }) {
                    let ready = waiting.remove(at: index)
                    start(ready.request, attempt: ready.attempt)
                    continue
                }
                guard waiting.count < settings.downloads, !exhausted else { break }
                guard let request = next() else { exhausted = true; break }
                let host = Self.host(of: request.url)
                if perHost[host, default: 0] >= settings.perHost {
                    waiting.append(Waiting(request: request, host: host, attempt: 1, due: now))
                } else {
                    start(request, attempt: 1)
                }
            }
            if active.isEmpty && waiting.isEmpty && exhausted { break }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard ccurl_message_is_done(message) != 0, let easy = ccurl_message_handle(message),
                      let context = ccurl_info_private(easy) else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                curl_multi_remove_handle(multi, easy)
                active[ObjectIdentifier(transfer)] = nil
                perHost[transfer.host, default: 1] -= 1
                let result = transfer.finish(ccurl_message_result(message), httpDate: httpDate)
                if case .failed(let failure, _) = result, failure.isTransient, transfer.attempt < settings.retry.attempts {
                    let delay = settings.retry.delay(after: transfer.attempt, retryAfter: failure.retryAfter)
                    waiting.append(Waiting(request: transfer.request, host: transfer.host, attempt: transfer.attempt + 1,
                                           due: Date().timeIntervalSince1970 + delay))
                } else {
                    deliver(transfer.request, result)
                }
            }
            // Sleep until curl has something, a retry falls due, or 100 ms pass (to notice a stop).
            let nextDue = waiting.map(\.due).min().map { max(0, $0 - Date().timeIntervalSince1970) } ?? 0.1
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, Int32(min(nextDue, 0.1) * 1000), &ready)
        }
        for transfer in active.values { curl_multi_remove_handle(multi, transfer.easy) }
    }

    static func host(of url: String) -> String { URLComponents(string: url)?.host ?? "" }
}

/// One transfer in flight: owns its curl easy handle, header list, error buffer and the
/// temporary file the body streams into.
private final class Transfer {
    let request: DownloadRequest
    let attempt: Int
    let host: String
    let easy: UnsafeMutableRawPointer
    private let limit: Int
    private let timeout: Double
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private let temporary: String
    private var descriptor: Int32
    private var received = 0
    private var digest = StableHash()
    private var head: [UInt8] = []
    private var exceeded = false
    private var writeFailed = false
    /// Headers of the last response (after redirects), names lower-cased.
    private var headers: [String: String] = [:]

    init(request: DownloadRequest, attempt: Int, settings: RemoteSettings, userAgent: String) throws {
        self.request = request
        self.attempt = attempt
        host = Downloader.host(of: request.url)
        limit = settings.maxDownloadBytes
        timeout = settings.timeout
        guard let easy = curl_easy_init() else { throw DownloadFailure(reason: .other(code: -1), detail: "curl_easy_init failed") }
        self.easy = easy
        errorBuffer.initialize(to: 0)
        let folder = Paths.directory(of: request.destination)
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        temporary = folder + "/." + Paths.lastComponent(request.destination) + AtomicFile.temporaryMarker + String(getpid())
        descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw DownloadFailure(reason: .other(code: -1), detail: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }

        var lines = request.headers.map { "\($0.key): \($0.value)" }
        if let etag = request.etag { lines.append("If-None-Match: \(etag)") }
        if let lastModified = request.lastModified { lines.append("If-Modified-Since: \(lastModified)") }
        for line in lines { headerList = curl_slist_append(headerList, line) }

        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_set_string(easy, CURLOPT_URL, request.url)
        _ = ccurl_set_pointer(easy, CURLOPT_PRIVATE, context)
        _ = ccurl_set_callback(easy, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receive(data!, size * count)
        })
        _ = ccurl_set_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = ccurl_set_callback(easy, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().header(data!, size * count)
        })
        _ = ccurl_set_pointer(easy, CURLOPT_HEADERDATA, context)
        _ = ccurl_set_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = ccurl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_set_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        _ = ccurl_set_long(easy, CURLOPT_MAXREDIRS, settings.maxRedirects)
        // Only http and https, for the first request and every redirect.
        _ = ccurl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = ccurl_set_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = ccurl_set_long(easy, CURLOPT_TIMEOUT_MS, Int(settings.timeout * 1000))
        _ = ccurl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeout * 1000))
        _ = ccurl_set_long(easy, CURLOPT_LOW_SPEED_LIMIT, settings.lowSpeedLimit)
        _ = ccurl_set_long(easy, CURLOPT_LOW_SPEED_TIME, Int(settings.lowSpeedTime.rounded(.up)))
        // Refused up front when Content-Length says so; counted in `receive` otherwise.
        _ = ccurl_set_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(settings.maxDownloadBytes))
        _ = ccurl_set_string(easy, CURLOPT_USERAGENT, userAgent)
        _ = ccurl_set_headers(easy, headerList)
        _ = ccurl_set_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        _ = ccurl_set_long(easy, CURLOPT_PIPEWAIT, 1)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
        if descriptor >= 0 { close(descriptor) }
        unlink(temporary)
    }

    private func receive(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        guard received + count <= limit else { exceeded = true; return 0 }
        let bytes = UnsafeRawBufferPointer(start: data, count: count)
        if head.count < ImageSignature.prefixLength { head += bytes.prefix(ImageSignature.prefixLength - head.count) }
        digest.combine(bytes: bytes)
        var written = 0
        while written < count {
            let result = write(descriptor, data + written, count - written)
            if result < 0 { if errno == EINTR { continue }; writeFailed = true; return 0 }
            written += result
        }
        received += count
        return count
    }

    private func header(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = [:]
        } else if let colon = line.firstIndex(of: ":") {
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return count
    }

    /// Classifies the ended transfer; on success the verified original is in its cache file.
    func finish(_ code: CURLcode, httpDate: DateFormatter) -> DownloadResult {
        let status = ccurl_info_long(easy, CURLINFO_RESPONSE_CODE)
        let elapsed = Double(ccurl_info_offset(easy, CURLINFO_TOTAL_TIME_T)) / 1e6
        let detail = String(cString: errorBuffer)
        guard code == CURLE_OK else {
            if exceeded { return .failed(DownloadFailure(reason: .tooLarge(limit: limit), detail: ""), attempts: attempt) }
            return .failed(.transport(code, detail: detail, elapsed: elapsed, timeout: timeout, limit: limit), attempts: attempt)
        }
        if status == 304 && (request.etag != nil || request.lastModified != nil) { return .notModified }
        guard (200..<300).contains(status) else {
            var failure = DownloadFailure(reason: .httpStatus(status), detail: "")
            failure.retryAfter = headers["retry-after"].flatMap { retryAfter($0, httpDate: httpDate) }
            return .failed(failure, attempts: attempt)
        }
        guard ImageSignature.looksLikeImage(head) else {
            return .failed(DownloadFailure(reason: .notAnImage(contentType: headers["content-type"]), detail: ""), attempts: attempt)
        }
        // The original enters the cache complete and durable, or not at all.
        let synced = fsync(descriptor) == 0
        close(descriptor)
        descriptor = -1
        guard !writeFailed, synced, rename(temporary, request.destination) == 0 else {
            return .failed(DownloadFailure(reason: .other(code: -1), detail: "cannot store \(request.destination): \(String(cString: strerror(errno)))"),
                           attempts: attempt)
        }
        return .fetched(etag: headers["etag"], lastModified: headers["last-modified"], contentHash: digest.hex, size: received)
    }

    /// Retry-After as seconds or as an HTTP date.
    private func retryAfter(_ value: String, httpDate: DateFormatter) -> Double? {
        if let seconds = Double(value) { return seconds }
        return httpDate.date(from: value).map { $0.timeIntervalSinceNow }
    }
}
