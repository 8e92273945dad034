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
        guard var components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)),
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
        let name = String(decoding: path[path.index(after: lastSlash)...], as: UTF8.self).removingPercentEncoding ?? ""
        fileName = name.isEmpty ? "index" : name
        let folderPath = String(decoding: path[..<lastSlash], as: UTF8.self).removingPercentEncoding ?? ""
        folder = host + (components.port.map { "_\($0)" } ?? "") + folderPath
    }

    /// True for list lines and sources that name a remote address rather than a file.
    package static func looksRemote(_ text: String) -> Bool { text.contains("://") }
}
