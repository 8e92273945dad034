internal import CCurl
internal import CSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Keys
import Imaging
import JobFile
import Output

/// One URL to fetch into the originals cache.
package struct DownloadRequest: Sendable {
    package let url: String
    /// `http.headers` plus the source's own; never logged or stored.
    package let headers: [String: String]
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
    /// libcurl's receive buffer per transfer (its default is 16 KiB): fewer, larger reads.
    package static let receiveBuffer = 256 << 10
    /// Threads that write, hash, fsync and rename finished bodies.
    package static let storeThreads = 4
    /// Most bodies a store thread takes at once: they are hashed together (see `StableHash.contentHashes`).
    package static let storeBatch = 4

    private let settings: RemoteSettings
    private let userAgent: String
    private let multi: UnsafeMutableRawPointer
    private let httpDate: DateFormatter

    /// curl_global_init is not thread-safe: done once, before any download thread starts.
    package static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    package init(settings: RemoteSettings) {
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

    /// One `run`'s transfers: those in flight, those waiting for a retry or for their host, and the
    /// bodies being stored.
    private final class DownloadSession {
        private struct Waiting {
            let request: DownloadRequest
            let host: String
            let attempt: Int
            let due: Double
        }

        private let downloader: Downloader
        private let settings: RemoteSettings
        private let next: () -> DownloadRequest?
        private let canStart: () -> Bool
        private let deliver: (DownloadRequest, DownloadResult) -> Void
        private var active: [ObjectIdentifier: Transfer] = [:]
        private var perHost: [String: Int] = [:]
        private var waiting: [Waiting] = []
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
                conclude(body.request, host: body.host, attempt: body.attempt, body.result)
            }
        }

        /// Admits waiting requests first (due retries, or new ones whose host was full), then new
        /// requests, within the global and per-host caps. New requests are pulled only while few
        /// wait, so a list of one host's URLs is never read ahead into memory.
        func admit() {
            let now = Date().timeIntervalSince1970
            while active.count < settings.downloads && storing < settings.downloads && canStart() {
                if let index = waiting.firstIndex(where: { $0.due <= now && perHost[$0.host, default: 0] < settings.perHost }) {
                    let ready = waiting.remove(at: index)
                    start(ready.request, host: ready.host, attempt: ready.attempt)
                    continue
                }
                guard waiting.count < settings.downloads, !exhausted else { break }
                guard let request = next() else { exhausted = true; break }
                let host = Downloader.host(of: request.url)
                if perHost[host, default: 0] >= settings.perHost {
                    waiting.append(Waiting(request: request, host: host, attempt: 1, due: now))
                } else {
                    start(request, host: host, attempt: 1)
                }
            }
        }

        /// Takes the transfers curl has finished; true if any ended.
        func readEnded() -> Bool {
            var queued: Int32 = 0
            var ended = false
            while let message = curl_multi_info_read(downloader.multi, &queued) {
                ended = true
                guard ccurl_message_is_done(message) != 0, let easy = ccurl_message_handle(message),
                      let context = ccurl_info_private(easy) else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                curl_multi_remove_handle(downloader.multi, easy)
                active[ObjectIdentifier(transfer)] = nil
                perHost[transfer.host, default: 1] -= 1
                switch transfer.finish(ccurl_message_result(message), httpDate: downloader.httpDate) {
                case .ended(let result):
                    conclude(transfer.request, host: transfer.host, attempt: transfer.attempt, result)
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
            for transfer in active.values { curl_multi_remove_handle(downloader.multi, transfer.easy) }
            store.close()
            for body in store.collect() {
                if case .fetched = body.result { deliver(body.request, body.result) }
            }
        }

        private func start(_ request: DownloadRequest, host: String, attempt: Int) {
            do {
                let transfer = try Transfer(request: request, host: host, attempt: attempt, settings: settings,
                                            userAgent: downloader.userAgent, buffer: spareBuffers.popLast() ?? [])
                active[ObjectIdentifier(transfer)] = transfer
                perHost[host, default: 0] += 1
                curl_multi_add_handle(downloader.multi, transfer.easy)
            } catch let failure as DownloadFailure {
                deliver(request, .failed(failure, attempts: attempt))
            } catch {
                deliver(request, .failed(DownloadFailure(reason: .local, detail: "\(error)"), attempts: attempt))
            }
        }

        /// A transient failure waits for its retry; anything else is final.
        private func conclude(_ request: DownloadRequest, host: String, attempt: Int, _ result: DownloadResult) {
            if case .failed(let failure, _) = result, failure.isTransient, attempt < settings.retry.attempts {
                let delay = settings.retry.delay(after: attempt, retryAfter: failure.retryAfter)
                waiting.append(Waiting(request: request, host: host, attempt: attempt + 1,
                                       due: Date().timeIntervalSince1970 + delay))
            } else {
                deliver(request, result)
            }
        }
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

/// Starts an original's writeback as soon as it is written, before hashing: the disk works while
/// the CPU hashes, and the fsync has little left to wait for (2,000 small originals: 2.05 -> 1.52 s).
private func startWriteback(_ descriptor: Int32) {
    _ = sync_file_range(descriptor, 0, 0, UInt32(CSYSTEM_SYNC_FILE_RANGE_WRITE))
}

/// Lets a store thread wake the transfer thread out of `curl_multi_poll` (thread-safe in libcurl).
private struct MultiWaker: @unchecked Sendable {
    let multi: UnsafeMutableRawPointer
    func wake() { _ = curl_multi_wakeup(multi) }
}

/// A verified body on its way into the cache. Built on the transfer thread, stored on a store
/// thread, collected back on the transfer thread; never touched by two threads at once.
private final class ReceivedBody: @unchecked Sendable {
    let request: DownloadRequest
    let host: String
    let attempt: Int
    private let temporary: String
    /// The temporary file, when the body spilled there; else -1 and the body is in `memory`.
    private var descriptor: Int32
    private let spilled: Bool
    private var memory: [UInt8]
    private let size: Int
    private let etag: String?
    private let lastModified: String?
    /// The content hash, once known.
    private var digest: String?
    private(set) var result = DownloadResult.notModified

    init(request: DownloadRequest, host: String, attempt: Int, temporary: String, descriptor: Int32, memory: [UInt8],
         size: Int, etag: String?, lastModified: String?) {
        (self.request, self.host, self.attempt) = (request, host, attempt)
        (self.temporary, self.descriptor, self.memory, self.size) = (temporary, descriptor, memory, size)
        (self.etag, self.lastModified) = (etag, lastModified)
        spilled = descriptor >= 0
    }

    /// Stores a few bodies at once: each one's bytes go to its temporary file, the ones in memory
    /// are hashed together (`StableHash.contentHashes`), then each is fsynced and renamed to its final name. An
    /// original enters the cache complete and durable, or not at all.
    static func store(_ bodies: [ReceivedBody]) {
        let written = bodies.filter { $0.write() }
        let inMemory = written.filter { !$0.spilled }
        let digests = withBytes(of: inMemory[...], []) { StableHash.contentHashes(of: $0) }
        for (body, digest) in zip(inMemory, digests) { body.digest = digest.hex }
        for body in written where body.spilled { body.hashReadingBack() }
        for body in written where body.digest != nil { body.commit() }
    }

    /// The bytes of every body in memory, at once.
    private static func withBytes<R>(of bodies: ArraySlice<ReceivedBody>, _ gathered: [UnsafeRawBufferPointer],
                                      _ work: ([UnsafeRawBufferPointer]) -> R) -> R {
        guard let first = bodies.first else { return work(gathered) }
        return first.memory.withUnsafeBytes { withBytes(of: bodies.dropFirst(), gathered + [$0], work) }
    }

    /// A body still in memory goes to its temporary file (a spilled one is there already), and
    /// the disk starts writing it, so that the fsync after hashing has little left to wait for.
    private func write() -> Bool {
        if !spilled {
            descriptor = Downloader.createTemporary(temporary)
            guard descriptor >= 0 else { fail("cannot create \(temporary)"); return false }
            if let failure = memory.withUnsafeBytes({ FileDescriptor.writeAll(descriptor, $0) }) {
                errno = failure
                fail("cannot write \(temporary)")
                return false
            }
        }
        startWriteback(descriptor)
        return true
    }

    /// Hashes a spilled body, read back from the page cache.
    private func hashReadingBack() {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Downloader.receiveBuffer, alignment: 16)
        defer { chunk.deallocate() }
        var hash = StableHash()
        var offset = 0
        while offset < size {
            let count = pread(descriptor, chunk.baseAddress, chunk.count, off_t(offset))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return fail("cannot read back \(temporary)") }
            hash.combine(bytes: UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            offset += count
        }
        digest = hash.hex
    }

    private func commit() {
        guard let digest, fsync(descriptor) == 0 else { return fail("cannot store \(request.destination)") }
        close(descriptor)
        descriptor = -1
        memory.removeAll(keepingCapacity: true)
        guard rename(temporary, request.destination) == 0 else { return fail("cannot store \(request.destination)") }
        result = .fetched(etag: etag, lastModified: lastModified, contentHash: digest, size: size)
    }

    /// The emptied memory buffer, for another transfer.
    func takeBuffer() -> [UInt8]? {
        guard memory.isEmpty, memory.capacity > 0 else { return nil }
        defer { memory = [] }
        return memory
    }

    private func fail(_ message: String) {
        let reason = String(cString: strerror(errno))
        if descriptor >= 0 { close(descriptor); descriptor = -1 }
        unlink(temporary)
        result = .failed(DownloadFailure(reason: .local, detail: "\(message): \(reason)"), attempts: attempt)
    }

    deinit {
        if descriptor >= 0 { close(descriptor); unlink(temporary) }
    }
}

/// The store threads: take received bodies, store them, hand them back and wake the transfer thread.
private final class OriginalStore: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [ReceivedBody] = []
    private var done: [ReceivedBody] = []
    private var closed = false
    private var running = 0
    private let waker: MultiWaker

    init(threads: Int, wake waker: MultiWaker) {
        self.waker = waker
        running = threads
        for index in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "runner.store.\(index)"
            thread.start()
        }
    }

    func submit(_ body: ReceivedBody) {
        condition.lock()
        queue.append(body)
        condition.signal()
        condition.unlock()
    }

    /// Bodies stored (or failed) since the last call.
    func collect() -> [ReceivedBody] {
        condition.lock()
        defer { condition.unlock() }
        let finished = done
        done.removeAll()
        return finished
    }

    /// Stores what was submitted, then ends the threads.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        while running > 0 { condition.wait() }
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while true {
            while queue.isEmpty && !closed { condition.wait() }
            guard !queue.isEmpty else { break }
            let batch = Array(queue.prefix(Downloader.storeBatch))
            queue.removeFirst(batch.count)
            condition.unlock()
            ReceivedBody.store(batch)
            condition.lock()
            done.append(contentsOf: batch)
            waker.wake()
        }
        running -= 1
        condition.broadcast()
        condition.unlock()
    }
}

/// One transfer in flight: owns its curl easy handle, header list, error buffer, and the body
/// received so far (in memory, or spilled to the temporary file).
private final class Transfer {
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
         buffer: [UInt8]) throws {
        self.request = request
        memory = buffer
        self.attempt = attempt
        self.host = host
        limit = settings.maxDownloadBytes
        timeout = settings.timeout
        guard let easy = curl_easy_init() else { throw DownloadFailure(reason: .local, detail: "curl_easy_init failed") }
        self.easy = easy
        errorBuffer.initialize(to: 0)
        // Named after this process: while it lives, no other run removes the file.
        temporary = AtomicFile.temporaryPath(for: request.destination, owner: getpid())

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
            var failure = DownloadFailure(reason: .httpStatus(status), detail: "")
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
