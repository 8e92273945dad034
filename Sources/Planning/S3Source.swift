import Foundation
import Support
import Model
import JobFile
import ObjectStore

/// An object in an S3-compatible bucket. Its listing's ETag is its identity for planning, so an
/// unchanged object costs no request beyond the listing; a changed one is fetched into the
/// originals cache with a signed GET, conditional on the cached original's ETag.
package struct S3Source: FetchedSource, Equatable, Codable {
    package let endpoint: S3Endpoint
    package let bucket: String
    package let key: String
    /// What the listing said; nil for a source made again from its entry, until its cached original says.
    package let etag: String?
    /// When the listing says the object was last written, as it says it.
    package let modified: String?

    package init(endpoint: S3Endpoint, bucket: String, key: String, etag: String?, modified: String? = nil) {
        (self.endpoint, self.bucket, self.key, self.etag, self.modified) = (endpoint, bucket, key, etag, modified)
    }

    package var changedAt: Date? { modified.flatMap(ListedObject.date) }

    package var location: String { ObjectURL(bucket: bucket, key: key).description }
    package var url: String { endpoint.url(bucket: bucket, key: key) }

    package func plannedIdentity(statting stats: FolderStat) -> SourceIdentity { etag.map(Self.identity) ?? .unknown }

    /// Signed anew for each attempt, its key sent as listed. Without credentials the request goes
    /// unsigned and its refusal says why. No redirect is followed: from a store it means a wrong
    /// region or endpoint, and would carry the session token to another host.
    package func request(_ settings: RemoteSettings) -> HTTPRequest {
        (try? SharedCredentials.current()).map { endpoint.signed("GET", bucket: bucket, key: key, credentials: $0).http() }
            ?? HTTPRequest("GET", url, pathAsIs: true)
    }

    /// No such key fails the object for good; throttling (503 SlowDown) and server errors for now;
    /// a refusal of the credentials, the access or the region stops the whole run.
    package func meaning(ofStatus status: Int, body: [UInt8]) -> ResponseMeaning {
        if HTTPStatus.isTransient(status) { return .transient }
        let code = XMLFields.first(of: ["Code"], in: body)["Code"]
        guard status != 404 || code == "NoSuchBucket",
              let fix = ObjectStoreError.fix(status: status, code: code, bucket: bucket, region: endpoint.region, answer: [:],
                                             credentials: try? SharedCredentials.current()) else { return .permanent }
        return .refused(ObjectStoreError.refused(location: location, status: status, code: code, fix: fix))
    }

    package func identity(of original: CachedOriginal) -> SourceIdentity {
        original.etag.map(Self.identity) ?? .content(original.contentHash)
    }

    /// A listing's and a GET's ETag, the same whether or not a store quotes it.
    private static func identity(_ etag: String) -> SourceIdentity {
        .etag(etag.trimmingCharacters(in: ["\"", " "]))
    }
}

extension S3Source {
    /// Which credentials a job with buckets signs with, said at the start of its run (a pod that
    /// fell back to a broader identity shows it); nil for a job without one.
    package static func credentialsNotice(_ job: Job) -> String? {
        guard job.sources.contains(where: { $0.listing is Listing }) || job.outputs.contains(where: { $0.destination is BucketDestination }) else { return nil }
        return (try? SharedCredentials.current()).map { "object store: \($0)" }
    }

    /// An `s3` spec: the objects below its prefix, page by page as the store lists them. Include
    /// and exclude match a key as a folder's do a file: its name, or (exclude) its path below the
    /// prefix's folder.
    struct Listing: SourceListing {
        let endpoint: S3Endpoint
        let bucket: String
        let prefix: String
        let include: [String]
        let exclude: [String]
        let retry: RetryPolicy

        /// Keys are named below the prefix's folder (`{dir}`), as a walk names files below its root.
        private var folder: Substring { prefix[..<(prefix.lastIndex(of: "/").map { prefix.index(after: $0) } ?? prefix.startIndex)] }

        func discover(spec: Int, walked: SourceDiscovery.WalkObserver?, _ visit: SourceDiscovery.Visitor) throws {
            let include = include.map { Wildcard($0, caseInsensitive: true) }, exclude = exclude.map { Wildcard($0, caseInsensitive: true) }
            try BucketListing(endpoint: endpoint, bucket: bucket, prefix: prefix, retry: retry).objects { object in
                let below = String(object.key.dropFirst(folder.count))
                let name = Paths.lastComponent(below)
                guard include.contains(where: { $0.matches(name) }), !exclude.contains(where: { $0.matches(name) || $0.matches(below) })
                else { return }
                try visit(made(key: object.key, etag: object.etag, modified: object.modified).entered(spec: spec, line: object.key))
            }
        }

        func source(at line: String?) -> DiscoveredSource? { line.map { made(key: $0, etag: nil) } }

        /// Only listing again tells what a bucket holds.
        func addInputs(to hash: inout StableHash, latestChange: inout Int64) -> Bool { false }

        private func made(key: String, etag: String?, modified: String? = nil) -> DiscoveredSource {
            let below = String(key.dropFirst(folder.count))
            let relative = below.lastIndex(of: "/").map { String(below[..<$0]) } ?? ""
            return DiscoveredSource(key: ObjectURL(bucket: bucket, key: key).description,
                                    origin: .s3(S3Source(endpoint: endpoint, bucket: bucket, key: key, etag: etag, modified: modified)),
                                    relativeDirectory: relative, fileName: Paths.lastComponent(key))
        }
    }
}
