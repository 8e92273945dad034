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
        guard var components = URLComponents(string: Self.trimmed(text, .whitespaces)),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host?.lowercased(), !host.isEmpty else { return nil }
        components.scheme = scheme
        components.host = host
        components.fragment = nil
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) {
            components.port = nil
        }
        if components.path.isEmpty { components.path = "/" }
        guard let normalized = components.string else { return nil }
        self.normalized = normalized
        // Split where the URL has a slash, then decode once: `components.path` is decoded already, so
        // decoding it again made %252e a dot and 100%25 nothing, and split a%2Fb.jpg as a folder.
        let path = components.percentEncodedPath.utf8
        let lastSlash = path.lastIndex(of: UInt8(ascii: "/")) ?? path.startIndex
        let name = Self.decoded(String(decoding: path[path.index(after: lastSlash)...], as: UTF8.self))
        fileName = name.isEmpty ? "index" : name
        folder = host + (components.port.map { "_\($0)" } ?? "") + Self.decoded(String(decoding: path[..<lastSlash], as: UTF8.self))
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
    package static func looksRemote(_ text: String) -> Bool { text.contains("://") }
}
