internal import CCurl
import Foundation
import Support
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A request as runner sends it, to an origin or to a store: what differs from one request to
/// another is said here, and `HTTPConnection` is the one place that hands it to curl.
package struct HTTPRequest: @unchecked Sendable {
    package enum Body: @unchecked Sendable {
        case none
        case bytes([UInt8])
        /// Read from the file as it is sent, never held in memory whole.
        case file(FileRange)
    }

    package var method: String
    package var url: String
    /// Sent as given; neither `Expect` nor, unless given, a `Content-Type` is added to a body.
    package var headers: [String: String]
    package var body = Body.none
    /// Where a successful (2xx) answer's body goes. Another answer's is kept in memory, its first
    /// `HTTPResponse.errorBodyLimit` bytes (an error document, a server's error page).
    package var answer: Answer
    /// Redirects followed, to http and https only; 0 follows none.
    package var redirects: Int
    /// The path goes on the wire as given, `.`, `..` and `//` segments included: an S3 key is an
    /// opaque name, signed as it is sent. An origin's URL is normalized as a browser would.
    package var pathAsIs: Bool
    package var timeout = 60.0
    package var connectTimeout = 10.0
    /// A transfer slower than `limit` bytes a second for `seconds` fails as stalled.
    package var lowSpeed: (limit: Int, seconds: Double)?
    package var userAgent: String?
    /// HTTP/2 where TLS offers it, waiting for a connection to multiplex on (a download's).
    package var multiplexed = false

    package init(_ method: String, _ url: String, headers: [String: String] = [:], body: Body = .none, pathAsIs: Bool = false,
                 redirects: Int = 0, answer: Answer = .memory(limit: HTTPResponse.documentLimit)) {
        (self.method, self.url, self.headers, self.body) = (method, url, headers, body)
        (self.pathAsIs, self.redirects, self.answer) = (pathAsIs, redirects, answer)
    }

    package enum Answer: @unchecked Sendable {
        /// In memory; a longer body fails the request (`HTTPFailure.Reason.tooLarge`).
        case memory(limit: Int)
        /// In `buffer` up to `inMemory` bytes, then written on to the descriptor `open` gives the
        /// first time it is needed (-1 with errno set if it cannot), which the caller owns; more
        /// than `limit` bytes in all fail the request.
        case spilling(inMemory: Int, limit: Int, buffer: [UInt8], open: () -> Int32)
    }
}

/// A request body's bytes, read from `descriptor` from `offset` as they are sent.
package struct FileRange: Sendable {
    package let descriptor: Int32
    package let offset: Int64
    package let length: Int
}

package struct HTTPResponse: Sendable {
    /// Most bytes of a document read into memory whole: a listing page (1,000 keys of up to 1,024
    /// bytes, URL-encoded, is 3.4 MB), an STS answer, an error document.
    package static let documentLimit = 8 << 20
    /// An error answer's body is kept up to here (the rest is dropped): what names its code.
    package static let errorBodyLimit = 64 << 10
    /// Response headers kept, in all: far above any store's or origin's.
    package static let headersLimit = 64 << 10

    package let status: Int
    /// Names lower-cased; the last of a repeated header; those of the last response (after redirects).
    package let headers: [String: String]
    /// The body, when it stayed in memory.
    package var body: [UInt8]
    /// Its bytes in all, in memory or written on.
    package let size: Int
    /// Its first bytes, wherever the rest went (an image's signature).
    package let head: [UInt8]

    /// The `<Code>` of an S3 or STS error document (`SignatureDoesNotMatch`, `AccessDenied`, ...).
    package var errorCode: String? { XMLFields.first(of: ["Code"], in: body)["Code"] }

    /// `Retry-After` in seconds (a number, or an HTTP date from now).
    package var retryAfter: Double? {
        guard let value = headers["retry-after"] else { return nil }
        return Double(value) ?? HTTPDate.parse(value).map { $0.timeIntervalSinceNow }
    }
}

/// Why a transfer ended without an answer, classified once from curl's code.
package struct HTTPFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Reason: Sendable, Equatable {
        case timedOut, stalled, hostNotFound, connectionFailed, connectionReset, truncated
        case tooManyRedirects, forbiddenScheme, malformedURL
        /// The answer's body was longer than the request accepts.
        case tooLarge(limit: Int)
        /// This machine failed, not the server: the answer could not be written, the body read,
        /// or the transfer set up.
        case local
        case other(code: Int)
    }

    package let reason: Reason
    /// curl's or the system's own words, when there are some.
    package let detail: String

    package init(_ reason: Reason, _ detail: String = "") { (self.reason, self.detail) = (reason, detail) }

    /// Worth another attempt: the network or the server, for now.
    package var isTransient: Bool {
        switch reason {
        case .timedOut, .stalled, .hostNotFound, .connectionFailed, .connectionReset, .truncated, .other: true
        case .tooManyRedirects, .forbiddenScheme, .malformedURL, .tooLarge, .local: false
        }
    }

    package var description: String {
        let summary: String = switch reason {
        case .timedOut: "timed out"
        case .stalled: "transfer stalled"
        case .hostNotFound: "host not found"
        case .connectionFailed: "connection failed"
        case .connectionReset: "connection reset"
        case .truncated: "body shorter than announced"
        case .tooManyRedirects: "too many redirects"
        case .forbiddenScheme: "redirected or pointed to a scheme other than http/https"
        case .malformedURL: "malformed URL"
        case .tooLarge(let limit): "larger than \(limit) bytes"
        case .local: "could not be stored here"
        case .other(let code): "curl error \(code)"
        }
        return detail.isEmpty ? summary : "\(summary): \(detail)"
    }

    fileprivate static func reason(_ code: CURLcode, elapsed: Double, timeout: Double) -> Reason {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .hostNotFound
        case CURLE_COULDNT_CONNECT: .connectionFailed
        // The low-speed limit and the whole-transfer limit share one code; the clock tells them apart.
        case CURLE_OPERATION_TIMEDOUT: elapsed + 0.5 < timeout ? .stalled : .timedOut
        case CURLE_PARTIAL_FILE: .truncated
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING: .connectionReset
        case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
        case CURLE_UNSUPPORTED_PROTOCOL: .forbiddenScheme
        case CURLE_URL_MALFORMAT: .malformedURL
        default: .other(code: Int(code.rawValue))
        }
    }
}

/// The one owner of a curl easy handle, for every request runner sends. Reused from request to
/// request (a listing's pages, a writer's changes) so they share its connection; used by one thread
/// at a time. `perform` runs a request on the calling thread; the downloader instead adds `easy`,
/// prepared by `prepare`, to its multi handle and calls `finish` when curl is done with it.
package final class HTTPConnection: @unchecked Sendable {
    package let easy: UnsafeMutableRawPointer
    private var exchange: Exchange?

    /// curl_global_init is not thread-safe: done once, before the first handle.
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    package init() throws(HTTPFailure) {
        _ = Self.globalInit
        guard let easy = curl_easy_init() else { throw HTTPFailure(.local, "curl_easy_init failed") }
        self.easy = easy
    }

    deinit { curl_easy_cleanup(easy) }

    /// Sends `request` and waits for its answer.
    package func perform(_ request: HTTPRequest) throws(HTTPFailure) -> HTTPResponse {
        prepare(request)
        return try finish(curl_easy_perform(easy).rawValue)
    }

    /// Sets the handle up for `request`, forgetting the last one's options.
    package func prepare(_ request: HTTPRequest) {
        curl_easy_reset(easy)
        let exchange = Exchange(easy, request)
        self.exchange = exchange
        _ = ccurl_set_string(easy, CURLOPT_URL, request.url)
        // Only http and https, for the first request and every redirect.
        for option in [CURLOPT_PROTOCOLS_STR, CURLOPT_REDIR_PROTOCOLS_STR] { _ = ccurl_set_string(easy, option, "http,https") }
        if let userAgent = request.userAgent { _ = ccurl_set_string(easy, CURLOPT_USERAGENT, userAgent) }
        if request.method != "GET" && request.method != "HEAD" { _ = ccurl_set_string(easy, CURLOPT_CUSTOMREQUEST, request.method) }
        // Any finite number of seconds; beyond ~30 years is "never", not a trap converting it.
        func capped(_ value: Double, _ scale: Double) -> Int { Int(min((value * scale).rounded(.up), 1e12)) }
        var options = [(CURLOPT_PATH_AS_IS, request.pathAsIs ? 1 : 0), (CURLOPT_FOLLOWLOCATION, request.redirects > 0 ? 1 : 0),
                       (CURLOPT_MAXREDIRS, request.redirects), (CURLOPT_NOSIGNAL, 1), (CURLOPT_BUFFERSIZE, 256 << 10),
                       (CURLOPT_TIMEOUT_MS, capped(request.timeout, 1000)), (CURLOPT_CONNECTTIMEOUT_MS, capped(request.connectTimeout, 1000))]
        if let (limit, seconds) = request.lowSpeed { options += [(CURLOPT_LOW_SPEED_LIMIT, limit), (CURLOPT_LOW_SPEED_TIME, capped(seconds, 1))] }
        if request.multiplexed { options += [(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), (CURLOPT_PIPEWAIT, 1)] }
        if request.method == "HEAD" { options.append((CURLOPT_NOBODY, 1)) }
        for (option, value) in options { _ = ccurl_set_long(easy, option, value) }
        // Refused up front when Content-Length says so; counted as it comes otherwise.
        _ = ccurl_set_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(exchange.limit))
        switch request.body {
        case .none: break
        case .bytes(let bytes):
            // Copied by curl. One byte more than is sent, so that an empty body still has an
            // address: with none, curl would read the body from standard input.
            _ = ccurl_set_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            _ = (bytes + [0]).withUnsafeBytes { ccurl_set_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
        case .file(let range):
            _ = ccurl_set_long(easy, CURLOPT_UPLOAD, 1)
            _ = ccurl_set_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(range.length))
        }
    }

    /// The answer to the prepared request, once curl ended it with `result` (a `CURLcode`).
    package func finish(_ result: UInt32) throws(HTTPFailure) -> HTTPResponse {
        guard let exchange else { throw HTTPFailure(.local, "no request was prepared") }
        defer { self.exchange = nil }
        return try exchange.finish(CURLcode(rawValue: result))
    }
}

/// One request's state while curl runs it, installed on the handle as it is made: its header list and
/// error buffer, the answer as it comes, and the body as it is read out.
private final class Exchange {
    let easy: UnsafeMutableRawPointer
    let request: HTTPRequest
    let limit: Int
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var headers: [String: String] = [:]
    private var headerBytes = 0
    private var status = 0
    private var memory: [UInt8] = []
    private var head: [UInt8] = []
    private var received = 0
    private var descriptor: Int32 = -1
    private var sent = 0
    /// Why the transfer was stopped from here, if it was.
    private var stopped: HTTPFailure?

    private static let headLength = 64

    init(_ easy: UnsafeMutableRawPointer, _ request: HTTPRequest) {
        (self.easy, self.request) = (easy, request)
        switch request.answer {
        case .memory(let limit): self.limit = limit
        case .spilling(_, let limit, let buffer, _): (self.limit, memory) = (limit, buffer)
        }
        var lines = request.headers.map { "\($0.key): \($0.value)" } + ["Expect:"]
        if case .none = request.body {} else if !request.headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            lines.append("Content-Type:")
        }
        for line in lines { headerList = curl_slist_append(headerList, line) }
        errorBuffer.initialize(to: 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_set_headers(easy, headerList)
        _ = ccurl_set_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            Unmanaged<Exchange>.fromOpaque(context!).takeUnretainedValue().received(UnsafeRawBufferPointer(start: data, count: size * count))
        }
        _ = ccurl_set_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = ccurl_set_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            Unmanaged<Exchange>.fromOpaque(context!).takeUnretainedValue().header(UnsafeRawBufferPointer(start: data, count: size * count))
        }
        _ = ccurl_set_pointer(easy, CURLOPT_HEADERDATA, context)
        if case .file = request.body {
            _ = ccurl_set_callback(easy, CURLOPT_READFUNCTION) { data, size, count, context in
                Unmanaged<Exchange>.fromOpaque(context!).takeUnretainedValue().read(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
            }
            _ = ccurl_set_pointer(easy, CURLOPT_READDATA, context)
        }
        _ = ccurl_set_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    func finish(_ code: CURLcode) throws(HTTPFailure) -> HTTPResponse {
        let elapsed = Double(ccurl_info_offset(easy, CURLINFO_TOTAL_TIME_T)) / 1e6
        _ = ccurl_set_pointer(easy, CURLOPT_ERRORBUFFER, nil)
        if let stopped { throw stopped }
        guard code == CURLE_OK else {
            if code == CURLE_FILESIZE_EXCEEDED { throw HTTPFailure(.tooLarge(limit: limit)) }
            let message = String(cString: errorBuffer)
            throw HTTPFailure(HTTPFailure.reason(code, elapsed: elapsed, timeout: request.timeout),
                              message.isEmpty ? String(cString: curl_easy_strerror(code)) : message)
        }
        return HTTPResponse(status: ccurl_info_long(easy, CURLINFO_RESPONSE_CODE), headers: headers, body: descriptor >= 0 ? [] : memory,
                            size: received, head: head)
    }

    /// A piece of the answer's body: a success's as its request says, an error's kept up to its limit.
    private func received(_ piece: UnsafeRawBufferPointer) -> Int {
        if status == 0 { status = ccurl_info_long(easy, CURLINFO_RESPONSE_CODE) }
        guard (200..<300).contains(status) else {
            memory += piece.prefix(max(0, HTTPResponse.errorBodyLimit - memory.count))
            return piece.count
        }
        guard received + piece.count <= limit else { return stop(HTTPFailure(.tooLarge(limit: limit))) }
        if head.count < Self.headLength { head += piece.prefix(Self.headLength - head.count) }
        received += piece.count
        guard case .spilling(let inMemory, _, _, let open) = request.answer, descriptor >= 0 || received > inMemory else {
            if memory.isEmpty {
                // Room for the announced length (within the limit), so the body is copied once.
                let announced = Int(ccurl_info_offset(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T))
                memory.reserveCapacity(min(max(announced, piece.count), limit))
            }
            memory.append(contentsOf: piece)
            return piece.count
        }
        if descriptor < 0 {
            descriptor = open()
            guard descriptor >= 0 else { return stop(HTTPFailure(.local, "cannot create a file for the answer: \(String(cString: strerror(errno)))")) }
        }
        // What stayed in memory goes first (nothing, once the answer spilled).
        let failure = memory.withUnsafeBytes { FileDescriptor.writeAll(descriptor, $0) } ?? FileDescriptor.writeAll(descriptor, piece)
        memory = []
        if let failure { return stop(HTTPFailure(.local, "cannot write the answer: \(String(cString: strerror(failure)))")) }
        return piece.count
    }

    private func stop(_ failure: HTTPFailure) -> Int {
        stopped = stopped ?? failure
        return 0
    }

    /// The next piece of the body's range, read where it stands in the file.
    private func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard case .file(let range) = request.body else { return 0 }
        let wanted = min(buffer.count, range.length - sent)
        guard wanted > 0 else { return 0 }
        guard let count = FileDescriptor.readAll(range.descriptor, UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]),
                                                 at: range.offset + Int64(sent)), count > 0 else {
            stopped = HTTPFailure(.local, "cannot read the body: \(String(cString: strerror(errno)))")
            return Int(CURL_READFUNC_ABORT)
        }
        sent += count
        return count
    }

    /// A header line: a status line starts a new response (after a redirect or a 100 Continue).
    private func header(_ line: UnsafeRawBufferPointer) -> Int {
        if line.starts(with: "HTTP/".utf8) {
            (headers, headerBytes, status) = ([:], 0, 0)
            return line.count
        }
        headerBytes += line.count
        guard headerBytes <= HTTPResponse.headersLimit else {
            return stop(HTTPFailure(.tooLarge(limit: HTTPResponse.headersLimit), "the response's headers"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return line.count }
        // The value without the blanks (SP, HTAB) and line end around it.
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        var (start, end) = (colon + 1, line.count)
        while start < end && isBlank(line[start]) { start += 1 }
        while end > start && isBlank(line[end - 1]) { end -= 1 }
        headers[String(decoding: line[..<colon], as: UTF8.self).lowercased()] = String(decoding: line[start..<end], as: UTF8.self)
        return line.count
    }
}

/// The text of the first element of each wanted name in an XML document: S3's and STS's answers
/// and error documents, whose names are unique where they are read.
package enum XMLFields {
    package static func first(of names: Set<String>, in document: [UInt8]) -> [String: String] {
        let collector = Collector(names)
        let parser = XMLParser(data: Data(document))
        parser.delegate = collector
        _ = parser.parse()
        return collector.found
    }

    private final class Collector: NSObject, XMLParserDelegate {
        let names: Set<String>
        var found: [String: String] = [:]
        var current: String?
        var text = ""

        init(_ names: Set<String>) { self.names = names }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if names.contains(name) && found[name] == nil { (current, text) = (name, "") }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { if current != nil { text += string } }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == current { (found[name], current) = (text, nil) }
        }
    }
}
