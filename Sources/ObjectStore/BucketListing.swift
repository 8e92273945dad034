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

/// ListObjectsV2 over a prefix, page by page (at most `pageSize` keys each, in the store's key
/// order), each page handed on before the next is asked for: memory holds one page whatever the
/// bucket's size. A page that fails for now (5xx, throttling, a dropped connection) is asked again
/// with backoff; a refusal stops the listing with what to fix.
package struct BucketListing: Sendable {
    package let endpoint: S3Endpoint
    package let bucket: String
    package let prefix: String
    /// S3's own (and largest) page; the tests ask for small pages through `RUNNER_TEST_LIST_PAGE`.
    package var pageSize = ProcessInfo.processInfo.environment["RUNNER_TEST_LIST_PAGE"].flatMap { Int($0) } ?? 1_000

    package init(endpoint: S3Endpoint, bucket: String, prefix: String) {
        (self.endpoint, self.bucket, self.prefix) = (endpoint, bucket, prefix)
    }

    /// Where the listing is, for messages: `s3://bucket/prefix`.
    package var location: String { ObjectURL(bucket: bucket, key: prefix).description }

    package func objects(_ visit: (ListedObject) throws -> Void) throws {
        var token: String?
        let connection = try HTTPExchange.Connection()
        repeat {
            var query = ["list-type": "2", "max-keys": String(pageSize), "encoding-type": "url"]
            if !prefix.isEmpty { query["prefix"] = prefix }
            if let token { query["continuation-token"] = token }
            let page = try fetchPage(query, on: connection)
            for object in page.objects { try visit(object) }
            token = page.next
        } while token != nil
    }

    private func fetchPage(_ query: [String: String], on connection: HTTPExchange.Connection) throws -> ListPage {
        let request = StoreRequest(endpoint: endpoint, bucket: bucket, location: location)
        let response = try request.send(on: connection) { endpoint.signed("GET", bucket: bucket, query: query, credentials: $0) }
        guard response.status == 200 else {
            throw ObjectStoreError.refused(location: location, status: response.status, code: response.errorCode, fix: "the listing was refused")
        }
        return try ListPage(response.body, location: location)
    }
}

/// One ListObjectsV2 answer: its objects (keys decoded from `encoding-type=url`, so any bytes
/// survive XML) and the token of the next page, if there is one.
private struct ListPage {
    var objects: [ListedObject] = []
    var next: String?

    init(_ document: [UInt8], location: String) throws {
        let reader = Reader()
        let parser = XMLParser(data: Data(document))
        parser.delegate = reader
        guard parser.parse() else {
            throw ObjectStoreError.unreachable(location: location, detail: "a listing page that is not XML")
        }
        objects = reader.objects
        next = reader.truncated ? reader.next : nil
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var objects: [ListedObject] = []
        var truncated = false
        var next: String?
        private var fields: [String: String] = [:]
        private var text = ""
        private var inContents = false

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if name == "Contents" { (inContents, fields) = (true, [:]) }
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            switch name {
            case "Contents":
                inContents = false
                // A key ending in / is a folder marker, not an object.
                // `encoding-type=url` encodes as a form does (a space is +), as botocore decodes it.
                if let key = fields["Key"]?.replacingOccurrences(of: "+", with: " ").removingPercentEncoding, !key.hasSuffix("/") {
                    objects.append(ListedObject(key: key, etag: fields["ETag"] ?? "", size: Int64(fields["Size"] ?? "") ?? 0,
                                                modified: fields["LastModified"]))
                }
            case "Key", "ETag", "Size", "LastModified": if inContents { fields[name] = text }
            case "IsTruncated": truncated = text == "true"
            case "NextContinuationToken": next = text
            default: break
            }
        }
    }
}
