import Foundation
import Support

/// How a request to a store that fails for now is sent again: the job's `retry` for writes,
/// these defaults for listings.
package struct StoreRetry: Sendable {
    package var attempts = 5
    package var firstBackoff = 0.5
    package var maxBackoff = 30.0

    package init() {}
    package init(attempts: Int, firstBackoff: Double, maxBackoff: Double) {
        (self.attempts, self.firstBackoff, self.maxBackoff) = (max(attempts, 1), firstBackoff, maxBackoff)
    }
}

/// One request to a bucket, signed anew for each attempt with the run's current credentials and
/// sent until the store answers other than for now (5xx, throttling, a dropped connection), with
/// backoff: what a listing page, an upload and a delete share.
package struct StoreRequest {
    package let endpoint: S3Endpoint
    package let bucket: String
    /// Where it is, for messages: `s3://bucket/key`.
    package let location: String
    package var retry: StoreRetry

    package init(endpoint: S3Endpoint, bucket: String, location: String, retry: StoreRetry = StoreRetry()) {
        (self.endpoint, self.bucket, self.location, self.retry) = (endpoint, bucket, location, retry)
    }

    /// The store's answer, a success or a refusal of this request alone (its caller reads which);
    /// throws `refused` for a refusal of the whole run (credentials, access, region, bucket) with
    /// what to fix, and `unreachable` once the attempts are spent.
    package func send(on connection: HTTPExchange.Connection, body: [UInt8]? = nil, upload: HTTPExchange.FileRange? = nil,
                      saveTo: Int32? = nil, _ sign: (AWSCredentials) -> SignedRequest) throws(ObjectStoreError) -> HTTPExchange.Response {
        var pause = retry.firstBackoff
        for attempt in 1...retry.attempts {
            let credentials = try SharedCredentials.current()
            let request = sign(credentials)
            // A retry after part of a saved answer was written starts the file over.
            if let saveTo { _ = ftruncate(saveTo, 0); _ = lseek(saveTo, 0, SEEK_SET) }
            let failure: String
            switch Result(catching: { () throws(HTTPExchange.Failure) in
                try connection.perform(request.method, request.url, headers: request.headers, body: body, upload: upload, saveTo: saveTo)
            }) {
            case .success(let response) where !HTTPStatus.isTransient(response.status):
                if !(200..<300).contains(response.status),
                   let fix = ObjectStoreError.fix(status: response.status, code: response.errorCode, bucket: bucket, region: endpoint.region,
                                                  bucketRegion: response.headers["x-amz-bucket-region"], credentials: credentials) {
                    throw .refused(location: location, status: response.status, code: response.errorCode, fix: fix)
                }
                return response
            case .success(let response): failure = "HTTP \(response.status)" + (response.errorCode.map { " \($0)" } ?? "")
            case .failure(let error): failure = error.description
            }
            if attempt == retry.attempts { throw .unreachable(location: location, detail: "\(failure) (after \(attempt) attempts)") }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, retry.maxBackoff)
        }
        preconditionFailure("the loop returns or throws")
    }
}
