import Support
import Model
import JobFile
import ObjectStore

/// An HTTP(S) URL: fetched into the originals cache by the download stage; its content is known
/// from the cached original's hash, or not yet.
package struct HTTPSource: FetchedSource, Equatable, Codable {
    package let url: String
    /// The source's own headers, on top of `http.headers`.
    package let headers: [String: String]

    package var location: String { url }
    package func plannedIdentity(statting stats: FolderStat) -> SourceIdentity { .unknown }

    /// Redirects followed as `http.maxRedirects` allows.
    package func request(_ settings: RemoteSettings) -> HTTPRequest {
        HTTPRequest("GET", url, headers: settings.headers.merging(headers) { $1 }, redirects: settings.maxRedirects)
    }

    /// A request timeout, throttling and a server error fail for now; any other status for good.
    package func meaning(ofStatus status: Int, body: [UInt8]) -> ResponseMeaning {
        HTTPStatus.isTransient(status) ? .transient : .permanent
    }

    package func identity(of original: CachedOriginal) -> SourceIdentity { .content(original.contentHash) }
}

extension HTTPSource {
    /// A `url` spec: one URL, with a key and headers of its own.
    struct Named: SourceListing {
        let url: String
        let key: String?
        let headers: [String: String]

        func discover(spec: Int, walked: SourceDiscovery.WalkObserver?, _ visit: SourceDiscovery.Visitor) throws {
            try visit(DiscoveredSource.remote(url, key: key, headers: headers).entered(spec: spec, line: nil))
        }

        func source(at line: String?) -> DiscoveredSource? {
            line == nil ? .remote(url, key: key, headers: headers) : nil
        }

        func addInputs(to hash: inout StableHash, latestChange: inout Int64) -> Bool {
            hash.combine("url")
            hash.combine(url)
            hash.combine(key.map { "key:" + $0 } ?? "-")
            hash.combine(String(headers.count))
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) { hash.combine(name); hash.combine(value) }
            return true
        }
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
