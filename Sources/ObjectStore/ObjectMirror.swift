import Foundation
import Support

/// One local file kept in a bucket as one object, and written there only over the version it was
/// last read or written as (S3's conditional writes, `If-Match` and `If-None-Match: *`): of two
/// writers that started from one version, the second finds the object changed and loses. The
/// body goes in one request, read whole: for files of up to a few hundred MB, a shard's state.
package struct ObjectMirror: Sendable {
    package let endpoint: S3Endpoint
    package let object: ObjectURL
    package let retry: StoreRetry

    package init(endpoint: S3Endpoint, object: ObjectURL, retry: StoreRetry) {
        (self.endpoint, self.object, self.retry) = (endpoint, object, retry)
    }

    package enum Fetched: Equatable {
        /// The object is still the version `known` names: nothing was fetched.
        case unchanged
        /// Another version was written to the file, whose ETag this is.
        case fetched(etag: String)
        /// There is no such object.
        case absent
    }

    package enum Stored: Equatable {
        case stored(etag: String)
        /// The object is no longer the version the file was read as (or now exists where none did).
        case conflict
    }

    /// GETs the object into `path` (written whole, then renamed over it) unless it is still the
    /// version `known` names.
    package func fetch(into path: String, unless known: String?) throws -> Fetched {
        let request = StoreRequest(endpoint: endpoint, bucket: object.bucket, location: object.description, retry: retry)
        let response = try request.send(on: try HTTPExchange.Connection()) { credentials in
            endpoint.signed("GET", bucket: object.bucket, key: object.key, headers: known.map { ["If-None-Match": $0] } ?? [:],
                            credentials: credentials)
        }
        switch response.status {
        case 304: return .unchanged
        case 404: return .absent
        case 200:
            guard let etag = response.headers["etag"] else { throw refusal(response, "it has no ETag") }
            try Data(response.body).write(to: URL(fileURLWithPath: path), options: .atomic)
            return .fetched(etag: etag)
        default: throw refusal(response, "it could not be read")
        }
    }

    /// PUTs the file at `path` over the version `etag` names, or with none only where there is no
    /// object yet.
    package func store(from path: String, over etag: String?) throws -> Stored {
        let body = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let request = StoreRequest(endpoint: endpoint, bucket: object.bucket, location: object.description, retry: retry)
        let condition = etag.map { ["If-Match": $0] } ?? ["If-None-Match": "*"]
        let response = try request.send(on: try HTTPExchange.Connection(), body: body) { credentials in
            endpoint.signed("PUT", bucket: object.bucket, key: object.key, headers: condition.merging(["Content-Type": "application/vnd.sqlite3"]) { $1 },
                            payloadHash: SigV4.payloadHash(of: body), credentials: credentials)
        }
        switch response.status {
        case 200..<300:
            guard let stored = response.headers["etag"] else { throw refusal(response, "the store gave no ETag") }
            return .stored(etag: stored)
        // 409: a conditional write that raced another (S3's ConditionalRequestConflict).
        case 412, 409: return .conflict
        default: throw refusal(response, "it could not be written")
        }
    }

    private func refusal(_ response: HTTPExchange.Response, _ what: String) -> ObjectStoreError {
        .refused(location: object.description, status: response.status, code: response.errorCode, fix: what)
    }
}
