import Foundation
import Support
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One object a listing names: its key, and what identifies its content without fetching it.
package struct ListedObject: Sendable, Equatable {
    package let key: String
    /// As the store gives it, quotes included (what `If-None-Match` sends back).
    package let etag: String
    package let size: Int64
    /// When the object was last written, as the store's clock says (ISO 8601, as the listing gives
    /// it: read only when asked, `ListedObject.date`); nil when the listing has no date.
    package var modified: String? = nil

    /// An ISO 8601 time, with or without fractional seconds (`2026-11-27T08:37:36.000Z`).
    package static func date(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}

/// ListObjectsV2 over a prefix, a page (at most `pageSize` keys) handed on before the next is asked for.
///
/// A listing is believed only whole, since what it leaves out is taken for gone (a prune deletes its
/// outputs): a page that contradicts itself or the pages before (`ListPage`), or is over
/// `HTTPResponse.documentLimit`, is asked again as a 5xx is, and once the attempts are spent the
/// listing fails (`ObjectStoreError.unreachable`: the run stops, exit 69).
package struct BucketListing: Sendable {
    package let endpoint: S3Endpoint
    package let bucket: String
    package let prefix: String
    /// S3's own (and largest) page; the tests ask for small pages through `RUNNER_TEST_LIST_PAGE`.
    package var pageSize = ProcessInfo.processInfo.environment["RUNNER_TEST_LIST_PAGE"].flatMap { Int($0) } ?? 1_000
    package let retry: RetryPolicy

    package init(endpoint: S3Endpoint, bucket: String, prefix: String, retry: RetryPolicy = .standard) {
        (self.endpoint, self.bucket, self.prefix, self.retry) = (endpoint, bucket, prefix, retry)
    }

    /// Where the listing is, for messages: `s3://bucket/prefix`.
    package var location: String { ObjectURL(bucket: bucket, key: prefix).description }

    package func objects(_ visit: (ListedObject) throws -> Void) throws {
        var token: String?
        var tokens: Set<String> = []
        var lastKey: String?
        let connection = try ObjectStoreError.connection(for: location)
        repeat {
            var query = ["list-type": "2", "max-keys": String(pageSize), "encoding-type": "url"]
            if !prefix.isEmpty { query["prefix"] = prefix }
            if let token { query["continuation-token"] = token }
            var page: ListPage?
            let request = StoreRequest(endpoint: endpoint, bucket: bucket, location: location, retry: retry)
            let response = try request.send(on: connection, accept: { response in
                guard response.status == 200 else { return nil }
                do throws(ListPage.Unbelievable) { page = try ListPage(response.body, prefix: prefix, after: lastKey, tokens: tokens) } catch {
                    return "a listing page \(error.reason)"
                }
                return nil
            }) { endpoint.signed("GET", bucket: bucket, query: query, credentials: $0).http() }
            guard response.status == 200, let page else {
                throw ObjectStoreError.refused(location: location, status: response.status, code: response.errorCode, fix: "the listing was refused")
            }
            for object in page.objects { try visit(object) }
            lastKey = page.lastKey ?? lastKey
            token = page.next
            if let token { tokens.insert(token) }
        } while token != nil
    }
}

/// One ListObjectsV2 answer, checked against the listing so far: its objects (keys decoded from
/// `encoding-type=url` when the answer says it is so encoded) and the token of the next page.
private struct ListPage {
    struct Unbelievable: Error {
        let reason: String
    }

    var objects: [ListedObject] = []
    var next: String?
    /// The page's last key, folder markers included: the next page's keys come after it.
    var lastKey: String?

    init(_ document: [UInt8], prefix: String, after previous: String?, tokens: Set<String>) throws(Unbelievable) {
        let reader = Reader()
        let parser = XMLParser(data: Data(document))
        parser.delegate = reader
        guard parser.parse(), reader.isResult else { throw Unbelievable(reason: "that is no ListObjectsV2 result") }
        if reader.truncated {
            guard let next = reader.next, !next.isEmpty else { throw Unbelievable(reason: "says more keys follow (IsTruncated) but gives no NextContinuationToken") }
            guard !tokens.contains(next) else { throw Unbelievable(reason: "repeats a continuation token an earlier page gave") }
            self.next = next
        }
        lastKey = previous
        for entry in reader.entries {
            guard var key = entry.key else { throw Unbelievable(reason: "lists an object without a Key") }
            // `encoding-type=url` encodes as a form does (a space is +), as botocore decodes it.
            if reader.urlEncoded {
                guard let decoded = key.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                    throw Unbelievable(reason: "has a key that is not URL-encoded: \(Quoted.value(key))")
                }
                key = decoded
            }
            guard key.utf8.starts(with: prefix.utf8) else { throw Unbelievable(reason: "lists \(Quoted.value(key)), outside the prefix") }
            if let lastKey, !bytewise(lastKey, key) {
                throw Unbelievable(reason: "lists \(Quoted.value(key)) after \(Quoted.value(lastKey)), out of order")
            }
            lastKey = key
            // A key ending in / is a folder marker, not an object.
            if !key.hasSuffix("/") {
                objects.append(ListedObject(key: key, etag: entry.etag, size: entry.size, modified: entry.modified))
            }
        }
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var entries: [(key: String?, etag: String, size: Int64, modified: String?)] = []
        var truncated = false
        var urlEncoded = false
        var isResult = false
        var next: String?
        private var fields: [String: String] = [:]
        private var text = ""
        private var inContents = false

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if name == "ListBucketResult" { isResult = true }
            if name == "Contents" { (inContents, fields) = (true, [:]) }
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            switch name {
            case "Contents":
                inContents = false
                entries.append((fields["Key"], fields["ETag"] ?? "", Int64(fields["Size"] ?? "") ?? 0, fields["LastModified"]))
            case "Key", "ETag", "Size", "LastModified": if inContents { fields[name] = text }
            case "IsTruncated": truncated = text == "true"
            case "NextContinuationToken": next = text
            case "EncodingType": urlEncoded = text == "url"
            default: break
            }
        }
    }
}
