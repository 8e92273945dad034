import Foundation

/// An HTTP(S) source address: its normalized form (the default source key) and the values its
/// output templates use. `{dir}` is the host plus the URL's folder, `{stem}`/`{ext}` come from the
/// last path component; all percent-decoded here and sanitized by `PathTemplate`.
package struct RemoteURL: Sendable {
    /// Scheme and host lower-cased, default port and fragment dropped.
    package let normalized: String
    package let folder: String
    package let fileName: String

    package init?(_ text: String) {
        if let canonical = Self.canonicalParts(text) {
            self.init(normalized: canonical.normalized, host: canonical.host, port: nil,
                      percentEncodedPath: canonical.path)
            return
        }
        self.init(parsing: text)
    }

    /// Through `URLComponents`: every URL the canonical fast path leaves to it.
    package init?(parsing text: String) {
        guard var components = URLComponents(string: Self.trimmed(text, .whitespaces)),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host?.lowercased(), !host.isEmpty else { return nil }
        components.scheme = scheme
        components.host = host
        components.fragment = nil
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) { components.port = nil }
        // The encoded path: the decoded one is empty for bytes that are not UTF-8 (`/%FF`), and
        // setting it to "/" made every such URL of a host one key.
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        guard let normalized = components.string else { return nil }
        self.init(normalized: normalized, host: host, port: components.port,
                  percentEncodedPath: Substring(components.percentEncodedPath))
    }

    private init(normalized: String, host: String, port: Int?, percentEncodedPath: Substring) {
        self.normalized = normalized
        // Split where the URL has a slash, then decode once: `components.path` is decoded already, so
        // decoding it again made %252e a dot and 100%25 nothing, and split a%2Fb.jpg as a folder.
        let path = percentEncodedPath.utf8
        let lastSlash = path.lastIndex(of: UInt8(ascii: "/")) ?? path.startIndex
        let name = Self.decoded(String(Substring(path[path.index(after: lastSlash)...])))
        fileName = name.isEmpty ? "index" : name
        folder = host + (port.map { "_\($0)" } ?? "") + Self.decoded(String(Substring(path[..<lastSlash])))
    }

    /// The URL's own text as its normalized form, with its host and path, when the text is already
    /// what `URLComponents` would make of it: `http://` or `https://` in lower case, a lower-case
    /// DNS name (no port, user, IP address or IDNA label), then a path and query of plain URL bytes
    /// and well-formed escapes, without dot segments or a fragment. Parsing and re-serializing such
    /// a URL was a third of planning a 10M-URL list; the rest goes through `init(parsing:)`, and a
    /// test holds both paths to the same answers.
    package static func canonicalParts(_ text: String) -> (normalized: String, host: String, path: Substring)? {
        var contiguous = text
        return contiguous.withUTF8 { bytes -> (normalized: String, host: String, path: Substring)? in
            let schemeLength = bytes.starts(with: "https://".utf8) ? 8 : bytes.starts(with: "http://".utf8) ? 7 : 0
            guard schemeLength > 0, let hostEnd = canonicalHostEnd(bytes, from: schemeLength) else { return nil }
            var index = hostEnd
            let pathStart = hostEnd
            var queryStart = bytes.count
            guard index == bytes.count || bytes[index] == UInt8(ascii: "/") else { return nil }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "%") {
                    guard index + 2 < bytes.count, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]) else { return nil }
                    index += 3
                    continue
                }
                guard byte < 128, plainURLByte[Int(byte)] else { return nil }
                if byte == UInt8(ascii: "?") && queryStart == bytes.count { queryStart = index }
                if byte == UInt8(ascii: "/") && queryStart == bytes.count && startsDotSegment(bytes, after: index, before: queryStart) {
                    return nil
                }
                index += 1
            }
            let host = String(decoding: UnsafeBufferPointer(rebasing: bytes[schemeLength..<hostEnd]), as: UTF8.self)
            guard pathStart < bytes.count else { return (text + "/", host, "/") }
            guard bytes[pathStart] == UInt8(ascii: "/") else { return nil }
            let path = String(decoding: UnsafeBufferPointer(rebasing: bytes[pathStart..<queryStart]), as: UTF8.self)
            return (text, host, Substring(path))
        }
    }

    /// Where a lower-case DNS name starting at `start` ends (at the path or the end), or nil for
    /// anything `URLComponents` might rewrite: upper case, a port, user info, an IP address, an
    /// IDNA (`xn--`) label, an empty label or one starting or ending with a hyphen.
    private static func canonicalHostEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start
        var labelStart = start
        var lastLabelStartsWithLetter = false
        while index < bytes.count && bytes[index] != UInt8(ascii: "/") {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                guard index > labelStart, bytes[index - 1] != UInt8(ascii: "-") else { return nil }
                labelStart = index + 1
            } else if isLowerLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "-") {
                if index == labelStart {
                    guard byte != UInt8(ascii: "-") else { return nil }
                    if byte == UInt8(ascii: "x") && index + 3 < bytes.count && bytes[index + 1] == UInt8(ascii: "n")
                        && bytes[index + 2] == UInt8(ascii: "-") && bytes[index + 3] == UInt8(ascii: "-") { return nil }
                    lastLabelStartsWithLetter = isLowerLetter(byte)
                }
            } else {
                return nil
            }
            index += 1
        }
        guard index > labelStart, bytes[index - 1] != UInt8(ascii: "-"), lastLabelStartsWithLetter,
              index - start <= 253 else { return nil }
        return index
    }

    /// True when the path segment after the slash at `slash` is `.` or `..` (URLComponents keeps
    /// them today; the fast path leaves them to it rather than depend on that).
    private static func startsDotSegment(_ bytes: UnsafeBufferPointer<UInt8>, after slash: Int, before end: Int) -> Bool {
        var index = slash + 1
        while index < bytes.count && index < slash + 3 && bytes[index] == UInt8(ascii: ".") { index += 1 }
        guard index > slash + 1 else { return false }
        return index == bytes.count || bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "?")
    }

    /// RFC 3986's unreserved and sub-delims characters, `:`, `@`, `/` and `?`: bytes a URL's path
    /// and query carry as they are. `%` is checked on its own, `#` ends the fast path.
    private static let plainURLByte: [Bool] = (0..<128).map { code in
        let byte = UInt8(code)
        return isLowerLetter(byte) || (byte >= 65 && byte <= 90) || isDigit(byte)
            || "-._~!$&'()*+,;=:@/?".utf8.contains(byte)
    }

    private static func isLowerLetter(_ byte: UInt8) -> Bool { byte >= 97 && byte <= 122 }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
    }

    /// `text` without the `set` characters at either end; `text` itself, without Foundation's
    /// (slow, per-character) trimming, when neither end has one: most of a million-line list's cost.
    package static func trimmed(_ text: String, _ set: CharacterSet) -> String {
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last,
              !set.contains(first) && !set.contains(last) else { return text.trimmingCharacters(in: set) }
        return text
    }

    /// Percent-decoded once; as written when the bytes are not UTF-8 (`%FF`), so the name still
    /// tells sources apart. Without a `%` there is nothing to decode (a million-line list's fast path).
    private static func decoded(_ text: String) -> String {
        text.utf8.contains(UInt8(ascii: "%")) ? text.removingPercentEncoding ?? text : text
    }

    /// True for list lines and sources that name a remote address rather than a file.
    /// On bytes: Foundation's `contains` was 8% of planning a 10M-URL list.
    package static func looksRemote(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count >= 3 else { return false }
            for index in 0...(bytes.count - 3) where bytes[index] == UInt8(ascii: ":")
                && bytes[index + 1] == UInt8(ascii: "/") && bytes[index + 2] == UInt8(ascii: "/") { return true }
            return false
        }
    }
}
