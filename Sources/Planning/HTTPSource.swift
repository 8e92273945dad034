import Support
import Model
import JobFile

/// An HTTP(S) URL: fetched into the originals cache by the download stage; its content is known
/// from the cached original's hash, or not yet.
package struct HTTPSource: FetchedSource, Equatable, Codable {
    package let url: String
    /// The source's own headers, on top of `http.headers`.
    package let headers: [String: String]

    package var location: String { url }
    package var fetched: (any FetchedSource)? { self }
    package func plannedIdentity(statting stats: FolderStat) -> SourceIdentity { .unknown }

    package func headers(_ settings: RemoteSettings) -> [String: String] {
        settings.headers.merging(headers) { $1 }
    }

    /// A request timeout, throttling and a server error fail for now; any other status for good.
    package func meaning(ofStatus status: Int) -> ResponseMeaning {
        status == 408 || status == 429 || status >= 500 ? .transient : .permanent
    }
}

extension DiscoveredSource {
    package static func remote(_ text: String, key: String?, headers: [String: String]) -> DiscoveredSource {
        // An address curl will reject (malformed, other scheme) still becomes an item, so it fails
        // as such and is blacklisted instead of stopping a list of thousands.
        let parsed = RemoteURL(text)
        return DiscoveredSource(key: key ?? parsed?.normalized ?? text,
                                origin: .http(HTTPSource(url: parsed?.normalized ?? text, headers: headers)),
                                relativeDirectory: parsed?.folder ?? "", fileName: parsed?.fileName ?? "index")
    }
}
