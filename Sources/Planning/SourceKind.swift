import Foundation
import Support
import Model
import JobFile
import ObjectStore

/// One kind of source (a file, an HTTP(S) URL, a bucket's object): all planning and the run ask of a
/// source that depends on its kind. `SourceOrigin.kind` is the one place that matches on which kind.
package protocol SourceKind: Sendable {
    /// The file path or URL: for people, and a fetched source's blacklist and transfer key.
    var location: String { get }
    /// What planning knows of the content before any transfer: a file's size and modification time
    /// (or why it cannot be read); a fetched source's listing, or `unknown`.
    func plannedIdentity(statting stats: FolderStat) -> SourceIdentity
    /// Itself when the download stage must fetch it before a worker can read it; nil for a file.
    var fetched: (any FetchedSource)? { get }
}

/// A kind the download stage fetches: `Downloader` runs its requests without knowing the kind,
/// which says what to send and what a failed response means.
package protocol FetchedSource: SourceKind {
    /// What is requested (its host is what `http.perHost` counts).
    var url: String { get }
    /// The request, made as each attempt starts (a signature is the attempt's): URL, headers (never
    /// logged or stored), redirects; the downloader adds validators, timeouts and the body's place.
    func request(_ settings: RemoteSettings) -> HTTPRequest
    /// What a response other than success or not-modified means; `body` is its start (an S3 error's code).
    func meaning(ofStatus status: Int, body: [UInt8]) -> ResponseMeaning
    /// The content of a fetched original, as items made from it are fingerprinted.
    func identity(of original: CachedOriginal) -> SourceIdentity
    /// When the source was last written, if its listing says: one written after its blacklisting is tried again.
    var changedAt: Date? { get }
}

extension FetchedSource {
    package var fetched: (any FetchedSource)? { self }
    package var changedAt: Date? { nil }
}

/// What a failed response means for the source, as its kind reads it.
package enum ResponseMeaning: Sendable, Equatable {
    /// The server fails for now (overloaded, throttling): retried with backoff, never blacklisted;
    /// a cached original serves stale meanwhile.
    case transient
    /// The source fails for good (gone, refused): blacklisted.
    case permanent
    /// The store refuses the run as it is set up (credentials, access, region), why and what to
    /// fix: the run stops, says it once, and blacklists nothing.
    case refused(ObjectStoreError)
}

/// How one spec of the job's `sources` names sources; `SourceSpec.listing` is the one place that matches on its kind.
package protocol SourceListing {
    /// Visits the sources it names in a stable order, each with its entry; `walked` hears what a walk reads.
    func discover(spec: Int, walked: SourceDiscovery.WalkObserver?, _ visit: SourceDiscovery.Visitor) throws
    /// The source its entry's `line` names, made as `discover` makes it; nil when it names none.
    func source(at line: String?) -> DiscoveredSource?
    /// Adds what decides its sources to `SourceInputs`, `latestChange` raised to a file it reads;
    /// false when only listing again tells.
    func addInputs(to hash: inout StableHash, latestChange: inout Int64) -> Bool
    /// Whether it can name one source twice (a list's lines can; a walk cannot).
    var canNameTwice: Bool { get }
}

extension SourceListing {
    package var canNameTwice: Bool { false }
}

extension SourceSpec {
    package var listing: any SourceListing {
        switch self {
        case .path(let root, let recursive, let include, let exclude):
            SourceDiscovery.Folder(root: root, recursive: recursive, include: include, exclude: exclude)
        case .glob(let pattern): SourceDiscovery.Glob(pattern)
        case .list(let path): SourceDiscovery.ListFile(path: path)
        case .url(let url, let key, let headers): HTTPSource.Named(url: url, key: key, headers: headers)
        case .bucket(let endpoint, let bucket, let prefix, let include, let exclude, let retry):
            S3Source.Listing(endpoint: endpoint, bucket: bucket, prefix: prefix, include: include, exclude: exclude, retry: retry)
        }
    }
}

/// Which kind a source is: one case per kind.
package enum SourceOrigin: Sendable, Equatable, Codable {
    case file(String)
    case http(HTTPSource)
    case s3(S3Source)

    package var kind: any SourceKind {
        switch self {
        case .file(let path): FileSource(path: path)
        case .http(let source): source
        case .s3(let source): source
        }
    }
}
