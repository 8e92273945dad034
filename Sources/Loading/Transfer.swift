internal import CCurl
import Foundation
import Support
import Model
import JobFile

/// One transfer in flight: owns its curl easy handle, header list, error buffer, and the body
/// received so far (in memory, or spilled to the temporary file).
final class Transfer {
    enum Completion {
        /// The request's result, with nothing to store.
        case ended(DownloadResult)
        /// A verified 2xx body, for a store thread.
        case store(ReceivedBody)
    }

    let request: DownloadRequest
    let attempt: Int
    let host: String
    let easy: UnsafeMutableRawPointer
    private let limit: Int
    private let timeout: Double
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private let temporary: String
    /// The temporary file, once the body outgrew `Downloader.memoryLimit`.
    private var descriptor: Int32 = -1
    private var memory: [UInt8]
    private var received = 0
    private var head: [UInt8] = []
    private var exceeded = false
    /// Why the body could not be written to its temporary file, if it could not.
    private var writeFailure: String?
    /// Headers of the last response (after redirects), names lower-cased.
    private var headers: [String: String] = [:]

    init(request: DownloadRequest, host: String, attempt: Int, settings: RemoteSettings, userAgent: String,
         buffer: [UInt8]) throws(DownloadFailure) {
        self.request = request
        memory = buffer
        (self.attempt, self.host) = (attempt, host)
        limit = settings.maxDownloadBytes
        timeout = settings.timeout
        guard let easy = curl_easy_init() else { throw DownloadFailure(reason: .local, detail: "curl_easy_init failed") }
        self.easy = easy
        errorBuffer.initialize(to: 0)
        // Named after this process: while it lives, no other run removes the file.
        temporary = AtomicFile.temporaryPath(for: request.destination, owner: getpid())

        var lines = request.source.headers(settings).map { "\($0.key): \($0.value)" }
        if let etag = request.etag { lines.append("If-None-Match: \(etag)") }
        if let lastModified = request.lastModified { lines.append("If-Modified-Since: \(lastModified)") }
        for line in lines { headerList = curl_slist_append(headerList, line) }

        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_set_string(easy, CURLOPT_URL, request.source.url)
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
        _ = ccurl_set_long(easy, CURLOPT_FOLLOWLOCATION, request.source.followsRedirects ? 1 : 0)
        _ = ccurl_set_long(easy, CURLOPT_MAXREDIRS, settings.maxRedirects)
        // Only http and https, for the first request and every redirect.
        _ = ccurl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = ccurl_set_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        // A job may ask for any finite number of seconds; beyond ~30 years is "never", not a trap
        // converting it to an integer.
        func capped(_ value: Double, _ scale: Double) -> Int { Int(min((value * scale).rounded(.up), 1e12)) }
        _ = ccurl_set_long(easy, CURLOPT_TIMEOUT_MS, capped(settings.timeout, 1000))
        _ = ccurl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, capped(settings.connectTimeout, 1000))
        _ = ccurl_set_long(easy, CURLOPT_LOW_SPEED_LIMIT, settings.lowSpeedLimit)
        _ = ccurl_set_long(easy, CURLOPT_LOW_SPEED_TIME, capped(settings.lowSpeedTime, 1))
        // Refused up front when Content-Length says so; counted in `receive` otherwise.
        _ = ccurl_set_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(settings.maxDownloadBytes))
        _ = ccurl_set_string(easy, CURLOPT_USERAGENT, userAgent)
        _ = ccurl_set_headers(easy, headerList)
        _ = ccurl_set_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        _ = ccurl_set_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = ccurl_set_long(easy, CURLOPT_BUFFERSIZE, Downloader.receiveBuffer)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
        if descriptor >= 0 {
            close(descriptor)
            unlink(temporary)
        }
    }

    private func receive(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        guard received + count <= limit else { exceeded = true; return 0 }
        let bytes = UnsafeRawBufferPointer(start: data, count: count)
        if head.count < ImageSignature.prefixLength { head += bytes.prefix(ImageSignature.prefixLength - head.count) }
        if descriptor < 0 && received + count <= Downloader.memoryLimit {
            if memory.isEmpty {
                // Room for the announced length (within the limit), so the body is copied once.
                let announced = Int(ccurl_info_offset(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T))
                memory.reserveCapacity(min(max(announced, count), Downloader.memoryLimit))
            }
            memory.append(contentsOf: bytes)
        } else {
            if descriptor < 0 {
                // Too big for memory: from here on the body streams into its temporary file.
                descriptor = Downloader.createTemporary(temporary)
                guard descriptor >= 0 else {
                    writeFailure = "cannot create \(temporary): \(String(cString: strerror(errno)))"
                    return 0
                }
                let failure = memory.withUnsafeBytes { FileDescriptor.writeAll(descriptor, $0) }
                memory = []
                if let failure { writeFailure = "cannot write \(temporary): \(String(cString: strerror(failure)))"; return 0 }
            }
            if let failure = FileDescriptor.writeAll(descriptor, bytes) {
                writeFailure = "cannot write \(temporary): \(String(cString: strerror(failure)))"
                return 0
            }
        }
        received += count
        return count
    }

    /// The response headers runner reads; the others are not kept.
    private static let wantedHeaders: Set<String> = ["etag", "last-modified", "retry-after", "content-type"]

    private func header(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        let line = UnsafeRawBufferPointer(start: data, count: count)
        if line.starts(with: "HTTP/".utf8) {
            headers = [:]  // a new response (after a redirect, or a 100 Continue)
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            guard Self.wantedHeaders.contains(name) else { return count }
            // The value without the blanks (SP, HTAB) and line end around it.
            func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
            var start = colon + 1
            var end = count
            while start < end && isBlank(line[start]) { start += 1 }
            while end > start && isBlank(line[end - 1]) { end -= 1 }
            headers[name] = String(decoding: line[start..<end], as: UTF8.self)
        }
        return count
    }

    /// Classifies the ended transfer; a verified 2xx body goes on to be stored.
    func finish(_ code: CURLcode, httpDate: DateFormatter) -> Completion {
        let status = ccurl_info_long(easy, CURLINFO_RESPONSE_CODE)
        let elapsed = Double(ccurl_info_offset(easy, CURLINFO_TOTAL_TIME_T)) / 1e6
        let detail = String(cString: errorBuffer)
        guard code == CURLE_OK else {
            if exceeded { return .ended(.failed(DownloadFailure(reason: .tooLarge(limit: limit), detail: ""), attempts: attempt)) }
            if let writeFailure { return .ended(.failed(DownloadFailure(reason: .local, detail: writeFailure), attempts: attempt)) }
            return .ended(.failed(.transport(code, detail: detail, elapsed: elapsed, timeout: timeout, limit: limit), attempts: attempt))
        }
        if status == 304 && (request.etag != nil || request.lastModified != nil) { return .ended(.notModified) }
        guard (200..<300).contains(status) else {
            var failure = DownloadFailure(reason: .httpStatus(status, request.source.meaning(ofStatus: status, body: memory)), detail: "")
            failure.retryAfter = headers["retry-after"].flatMap { retryAfter($0, httpDate: httpDate) }
            return .ended(.failed(failure, attempts: attempt))
        }
        guard ImageSignature.looksLikeImage(head) else {
            return .ended(.failed(DownloadFailure(reason: .notAnImage(contentType: headers["content-type"]), detail: ""), attempts: attempt))
        }
        let body = ReceivedBody(request: request, host: host, attempt: attempt, temporary: temporary, descriptor: descriptor,
                                memory: memory, size: received, etag: headers["etag"], lastModified: headers["last-modified"])
        descriptor = -1  // the body owns the temporary file now
        memory = []
        return .store(body)
    }

    /// Retry-After as seconds or as an HTTP date.
    private func retryAfter(_ value: String, httpDate: DateFormatter) -> Double? {
        if let seconds = Double(value) { return seconds }
        return httpDate.date(from: value).map { $0.timeIntervalSinceNow }
    }
}
