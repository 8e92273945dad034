import Foundation
import Testing
import TestSupport

/// What an S3 answer means for an object and for the run: HTTP's retry and blacklist rules, plus
/// the refusals that concern the whole run's configuration.
@Suite("Bucket responses")
struct BucketResponseTests {
    static let source = S3Source(endpoint: S3Endpoint(url: "http://127.0.0.1:9000", region: "eu-west-1", addressing: .path)!,
                                 bucket: "photos", key: "a b.jpg", etag: "\"abc\"")

    static func error(_ code: String) -> [UInt8] { Array("<Error><Code>\(code)</Code><Message>m</Message></Error>".utf8) }

    @Test("no such key is permanent; throttling and server errors transient; credentials, access and region refuse the run")
    func meanings() {
        let source = Self.source
        #expect(source.meaning(ofStatus: 404, body: Self.error("NoSuchKey")) == .permanent)
        #expect(source.meaning(ofStatus: 503, body: Self.error("SlowDown")) == .transient)
        #expect(source.meaning(ofStatus: 500, body: []) == .transient)
        for (status, code, fix) in [(403, "SignatureDoesNotMatch", "check AWS_SECRET_ACCESS_KEY"), (403, "AccessDenied", "allow s3:ListBucket"),
                                    (400, "AuthorizationHeaderMalformed", "not eu-west-1: set region (and endpoint)"),
                                    (301, "PermanentRedirect", "not eu-west-1"), (404, "NoSuchBucket", "no bucket photos")] {
            guard case .refused(let refusal) = source.meaning(ofStatus: status, body: Self.error(code)) else {
                Issue.record("\(status) \(code) must refuse the run")
                continue
            }
            #expect(refusal.exitCode == 78)
            #expect(refusal.description.hasPrefix("s3://photos/a b.jpg: the object store refused: HTTP \(status) \(code): "))
            #expect(refusal.description.contains(fix), "\(refusal)")
        }
    }

    @Test("a listing's ETag and a GET's are one identity, quoted or not; the object's URL encodes its key as signed")
    func identity() {
        let original = CachedOriginal(sourceKey: "k", url: "u", file: "f", etag: "abc", lastModified: nil, contentHash: "h", size: 1,
                                      fetchedAt: 0, validatedAt: 0, usedAt: 0)
        #expect(Self.source.plannedIdentity(statting: FolderStat()) == Self.source.identity(of: original))
        #expect(Self.source.url == "http://127.0.0.1:9000/photos/a%20b.jpg")
    }

    @Test("a bucket object is requested with its key exactly as listed and no redirect followed")
    func request() throws {
        let job = try Job.parse(text: #"{"version": 1, "sources": [{"path": "."}], "outputs": [{"name": "t", "path": "o/{stem}.webp", "chain": [], "format": {"type": "webp"}}]}"#,
                                filePath: "/tmp/job.json")
        let request = Self.source.request(job.remote)
        #expect(request.redirects == 0 && request.pathAsIs && request.url == Self.source.url)
    }
}
