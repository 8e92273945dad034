internal import CCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// AWS Signature Version 4, computed here rather than by libcurl's CURLOPT_AWS_SIGV4, whose
/// canonical form changed between Debian 12's 7.88 and curl 8 (docs/DESIGN.md, Choices): the same
/// request signs the same on any libcurl, and AWS's published examples test it without a network.
package enum SigV4 {
    /// The payload hash that asks the server not to check the body against one.
    package static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The `Authorization` value of a request. `path` and `query` are canonical already (see
    /// `encoded` and `canonicalQuery`) and go on the wire exactly so; `headers` are every header
    /// signed, `host` and `x-amz-date` among them, as they will be sent.
    package static func authorization(method: String, path: String, query: String, headers: [String: String],
                                      payloadHash: String, credentials: AWSCredentials, region: String,
                                      service: String, amzDate: String) -> String {
        let canonical = headers.map { (name: $0.key.lowercased(), value: trimmed($0.value)) }.sorted { $0.name < $1.name }
        let signedHeaders = canonical.map(\.name).joined(separator: ";")
        let request = [method, path, query, canonical.map { "\($0.name):\($0.value)\n" }.joined(), signedHeaders, payloadHash]
            .joined(separator: "\n")
        let day = String(amzDate.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, Self.payloadHash(of: Array(request.utf8))].joined(separator: "\n")
        var key = Array("AWS4\(credentials.secretAccessKey.revealed)".utf8)
        for part in [day, region, service, "aws4_request"] { key = hmac(key, part) }
        return "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), "
            + "Signature=\(hex(hmac(key, stringToSign)))"
    }

    /// RFC 3986 percent-encoding as SigV4 wants it: every byte of the UTF-8 but `A-Z a-z 0-9 - _ . ~`
    /// (and `/`, for an S3 key's path) as `%XX` in upper case. A space is `%20`, never `+`.
    package static func encoded(_ text: String, keepingSlashes: Bool) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if unreserved[Int(byte)] || (keepingSlashes && byte == UInt8(ascii: "/")) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), upperHex[Int(byte >> 4)], upperHex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parameters encoded and sorted by name, `name=value` joined by `&` (a valueless one is
    /// `name=`): the canonical query, and the query sent, so the two cannot differ.
    package static func canonicalQuery(_ parameters: [String: String]) -> String {
        parameters.map { (encoded($0.key, keepingSlashes: false), encoded($0.value, keepingSlashes: false)) }
            .sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC: the request's `x-amz-date`.
    package static func amzDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// The hex SHA-256 of a body: its `x-amz-content-sha256` when the payload is signed.
    package static func payloadHash(of body: some ContiguousBytes) -> String {
        hex(body.withUnsafeBytes { sha256($0) })
    }

    /// The hex SHA-256 of a body sent from a file, hashed where the file is mapped (never copied
    /// into memory); nil when the file cannot be mapped.
    package static func payloadHash(of range: FileRange) -> String? { range.mapped { hex(sha256($0)) } }

    /// The hex MD5 of a body sent from a file: the ETag S3 gives an object written in one PUT.
    package static func md5(of range: FileRange) -> String? { range.mapped(md5) }

    package static func md5(_ bytes: UnsafeRawBufferPointer) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, EVP_md5(), nil)
        return hex(Array(digest[..<Int(length)]))
    }

    static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &digest)
        return digest
    }

    static func hmac(_ key: [UInt8], _ message: String) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        let message = Array(message.utf8)
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &mac, &length)
        return mac
    }

    static func hex(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.flatMap { [lowerHex[Int($0 >> 4)], lowerHex[Int($0 & 0x0F)]] }, as: UTF8.self)
    }

    /// A header value without the blanks around it, each run of spaces inside one space.
    private static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }

    private static let upperHex = Array("0123456789ABCDEF".utf8)
    private static let lowerHex = Array("0123456789abcdef".utf8)
    private static let unreserved: [Bool] = (0..<256).map { code in
        let byte = UInt8(code)
        return (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || "-_.~".utf8.contains(byte)
    }
}

extension FileRange {
    /// `work` on the range's bytes where the file is mapped; nil when it cannot be mapped.
    func mapped<T>(_ work: (UnsafeRawBufferPointer) -> T) -> T? {
        guard length > 0 else { return work(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let page = Int64(sysconf(Int32(_SC_PAGESIZE)))
        let start = offset / page * page
        let lead = Int(offset - start)
        guard let pages = mmap(nil, lead + length, PROT_READ, MAP_PRIVATE, descriptor, off_t(start)), pages != MAP_FAILED else { return nil }
        defer { munmap(pages, lead + length) }
        return work(UnsafeRawBufferPointer(start: pages + lead, count: length))
    }
}
