internal import CCurl
import Foundation
import Support
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One HTTP request whose body and answer fit in memory (STS, a listing page, a PUT of an output
/// or the manifest), run on the calling thread with an easy handle of its own. Originals are not
/// fetched here: the downloader's multi handle does that, with these signed URLs and headers.
package enum HTTPExchange {
    package struct Response: Sendable {
        package let status: Int
        /// Names lower-cased; the last of a repeated header.
        package let headers: [String: String]
        package let body: [UInt8]

        /// The `<Code>` of an S3 or STS error document (`SignatureDoesNotMatch`, `AccessDenied`, ...).
        package var errorCode: String? { XMLFields.first(of: ["Code"], in: body)["Code"] }
    }

    /// A request body read from a file as it is sent (an output, a part of one, the state),
    /// never held in memory whole.
    package struct FileRange: Sendable {
        package let descriptor: Int32
        package let offset: Int64
        package let length: Int

        package init(descriptor: Int32, offset: Int64, length: Int) { (self.descriptor, self.offset, self.length) = (descriptor, offset, length) }
    }

    /// The transfer failed before an answer: curl's code and message.
    package struct Failure: Error, CustomStringConvertible {
        package let code: Int
        package let description: String
    }

    /// curl_global_init is not thread-safe: done once, before the first handle.
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Sends `method` to `url` exactly as given: the path is not normalized (`CURLOPT_PATH_AS_IS`,
    /// so a key's `.` and `..` segments stay as signed), and neither `Expect` nor, unless `headers`
    /// give one, a `Content-Type` is added to a body.
    package static func perform(_ method: String, _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil,
                                timeout: Double = 60) throws(Failure) -> Response {
        try Connection().perform(method, url, headers: headers, body: body, timeout: timeout)
    }

    /// One easy handle for a series of requests (a listing's pages, a writer's changes), so they
    /// share its connection (and TLS session) rather than open one each. Used by one thread at a
    /// time: a writer hands its connections from thread to thread through a lock.
    package final class Connection: @unchecked Sendable {
        private let easy: UnsafeMutableRawPointer

        package init() throws(Failure) {
            _ = HTTPExchange.globalInit
            guard let easy = curl_easy_init() else { throw Failure(code: -1, description: "curl_easy_init failed") }
            self.easy = easy
        }

        deinit { curl_easy_cleanup(easy) }

        /// `HTTPExchange.perform` on this connection; the body from `upload` instead of `body`, and a
        /// successful (2xx) answer's body written to `saveTo` instead of kept.
        package func perform(_ method: String, _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil,
                             upload: FileRange? = nil, saveTo: Int32? = nil, timeout: Double = 60) throws(Failure) -> Response {
            curl_easy_reset(easy)
            var lines: UnsafeMutablePointer<curl_slist>?
            defer { curl_slist_free_all(lines) }
            var sent = headers.map { "\($0.key): \($0.value)" } + ["Expect:"]
            if (body != nil || upload != nil) && !headers.keys.contains(where: { $0.lowercased() == "content-type" }) { sent.append("Content-Type:") }
            for line in sent { lines = curl_slist_append(lines, line) }
            _ = ccurl_set_headers(easy, lines)
            _ = ccurl_set_string(easy, CURLOPT_URL, url)
            _ = ccurl_set_long(easy, CURLOPT_PATH_AS_IS, 1)
            _ = ccurl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = ccurl_set_long(easy, CURLOPT_NOSIGNAL, 1)
            _ = ccurl_set_long(easy, CURLOPT_TIMEOUT_MS, Int(min(timeout, 1e9) * 1000))
            if method == "HEAD" {
                _ = ccurl_set_long(easy, CURLOPT_NOBODY, 1)
            } else if method != "GET" {
                _ = ccurl_set_string(easy, CURLOPT_CUSTOMREQUEST, method)
            }
            if let body {
                // Copied by curl. One byte more than is sent, so that an empty body still has an address:
                // with none, curl would read the body from standard input.
                _ = ccurl_set_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
                _ = (body + [0]).withUnsafeBytes { ccurl_set_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
            }
            let received = Received(easy, upload: upload, saveTo: saveTo)
            if let upload {
                _ = ccurl_set_long(easy, CURLOPT_UPLOAD, 1)
                _ = ccurl_set_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(upload.length))
            }
            return try received.perform()
        }
    }

    /// One transfer's answer, collected by curl's callbacks: the last response's headers (after a
    /// `100 Continue`) and body.
    private final class Received {
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        let upload: FileRange?
        let saveTo: Int32?
        var sent = 0
        var status = 0
        /// The errno of a failed write to `saveTo`.
        var saveError: Int32?
        let easy: UnsafeMutableRawPointer

        init(_ easy: UnsafeMutableRawPointer, upload: FileRange?, saveTo: Int32?) { (self.easy, self.upload, self.saveTo) = (easy, upload, saveTo) }

        func perform() throws(Failure) -> Response {
            let context = Unmanaged.passUnretained(self).toOpaque()
            _ = ccurl_set_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().received(UnsafeRawBufferPointer(start: data, count: size * count))
            }
            _ = ccurl_set_pointer(easy, CURLOPT_WRITEDATA, context)
            if upload != nil {
                _ = ccurl_set_callback(easy, CURLOPT_READFUNCTION) { data, size, count, context in
                    Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().read(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
                }
                _ = ccurl_set_pointer(easy, CURLOPT_READDATA, context)
            }
            _ = ccurl_set_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                Unmanaged<Received>.fromOpaque(context!).takeUnretainedValue().header(UnsafeRawBufferPointer(start: data, count: size * count))
                return size * count
            }
            _ = ccurl_set_pointer(easy, CURLOPT_HEADERDATA, context)
            var buffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
            let (code, message) = buffer.withUnsafeMutableBufferPointer { buffer in
                _ = ccurl_set_pointer(easy, CURLOPT_ERRORBUFFER, buffer.baseAddress)
                let code = withExtendedLifetime(self) { curl_easy_perform(easy) }
                return (code, String(cString: buffer.baseAddress!))
            }
            guard code == CURLE_OK else {
                let reason = saveError.map { "cannot write the answer: \(String(cString: strerror($0)))" }
                    ?? (message.isEmpty ? String(cString: curl_easy_strerror(code)) : message)
                throw Failure(code: Int(code.rawValue), description: reason)
            }
            return Response(status: ccurl_info_long(easy, CURLINFO_RESPONSE_CODE), headers: headers, body: body)
        }

        /// A piece of the answer's body: to `saveTo` for a success, else kept (an error document).
        private func received(_ piece: UnsafeRawBufferPointer) -> Int {
            if status == 0 { status = ccurl_info_long(easy, CURLINFO_RESPONSE_CODE) }
            guard let saveTo, (200..<300).contains(status) else {
                body += piece
                return piece.count
            }
            saveError = FileDescriptor.writeAll(saveTo, piece)
            if saveError != nil { return 0 }
            return piece.count
        }

        /// The next piece of `upload`'s range, read where it stands in the file.
        private func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
            guard let upload else { return 0 }
            let wanted = min(buffer.count, upload.length - sent)
            guard wanted > 0 else { return 0 }
            guard let count = FileDescriptor.readAll(upload.descriptor, UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]),
                                                     at: upload.offset + Int64(sent)), count > 0 else { return Int(CURL_READFUNC_ABORT) }
            sent += count
            return count
        }

        private func header(_ line: UnsafeRawBufferPointer) {
            if line.starts(with: "HTTP/".utf8) { headers = [:]; return }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
            headers[String(decoding: line[..<colon], as: UTF8.self).lowercased()] =
                String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
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
