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
        // On bytes: a decoded %2F followed by a combining mark is one Character but still a slash.
        let path = components.path.utf8
        let lastSlash = path.lastIndex(of: UInt8(ascii: "/")) ?? path.startIndex
        let name = Self.percentDecoded(String(decoding: path[path.index(after: lastSlash)...], as: UTF8.self))
        fileName = name.isEmpty ? "index" : name
        let folderPath = Self.percentDecoded(String(decoding: path[..<lastSlash], as: UTF8.self))
        folder = host + (components.port.map { "_\($0)" } ?? "") + folderPath
    }

    /// `text` without the `set` characters at either end; `text` itself, without Foundation's
    /// (slow, per-character) trimming, when neither end has one: most of a million-line list's cost.
    package static func trimmed(_ text: String, _ set: CharacterSet) -> String {
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last,
              !set.contains(first) && !set.contains(last) else { return text.trimmingCharacters(in: set) }
        return text
    }

    /// Percent-decoded, or "" when the escapes are not UTF-8; without a `%` there is nothing to decode.
    private static func percentDecoded(_ text: String) -> String {
        text.utf8.contains(UInt8(ascii: "%")) ? text.removingPercentEncoding ?? "" : text
    }

    /// True for list lines and sources that name a remote address rather than a file.
    package static func looksRemote(_ text: String) -> Bool { text.contains("://") }
}
