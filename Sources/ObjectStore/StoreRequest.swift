import Foundation
import Support

/// How a request that failed for now is sent again, to an origin or a store: exponential backoff with
/// full jitter, Retry-After honoured up to `maxDelay`. The job's `retry`; `standard` where it sets none.
public struct RetryPolicy: Sendable, Equatable {
    public var attempts: Int
    public var initialDelay: Double
    public var maxDelay: Double

    package init(attempts: Int, initialDelay: Double, maxDelay: Double) {
        (self.attempts, self.initialDelay, self.maxDelay) = (max(attempts, 1), initialDelay, maxDelay)
    }

    package static let standard = RetryPolicy(attempts: 5, initialDelay: 0.5, maxDelay: 30)

    /// The wait before attempt `attempt` + 1 (attempt counts from 1).
    package func delay(after attempt: Int, retryAfter: Double?) -> Double {
        if let retryAfter { return min(max(retryAfter, 0), maxDelay) }
        let ceiling = min(maxDelay, initialDelay * pow(2, Double(attempt - 1)))
        return Double.random(in: ceiling / 2...ceiling)
    }
}

/// One request to a bucket, signed anew for each attempt with the run's current credentials and sent
/// until the store answers other than for now (5xx, throttling, a dropped connection, an answer
/// `accept` finds unusable), as `retry` says.
package struct StoreRequest {
    package let endpoint: S3Endpoint
    package let bucket: String
    /// Where it is, for messages: `s3://bucket/key`.
    package let location: String
    package var retry: RetryPolicy

    /// The store's answer, a success or a refusal of this request alone (its caller reads which);
    /// throws `refused` for a refusal of the whole run (credentials, access, region, bucket, clock)
    /// with what to fix, and `unreachable` once the attempts are spent. `accept` says why a success
    /// cannot be believed (a listing page that contradicts itself), which counts as failing for now.
    package func send(on connection: HTTPConnection, accept: (HTTPResponse) -> String? = { _ in nil },
                      _ make: (AWSCredentials) -> HTTPRequest) throws(ObjectStoreError) -> HTTPResponse {
        for attempt in 1...retry.attempts {
            let credentials = try SharedCredentials.current()
            let failure: String
            var retryAfter: Double?
            switch Result(catching: { () throws(HTTPFailure) in try connection.perform(make(credentials)) }) {
            case .success(let response) where !HTTPStatus.isTransient(response.status):
                if !(200..<300).contains(response.status),
                   let fix = ObjectStoreError.fix(status: response.status, code: response.errorCode, bucket: bucket, region: endpoint.region,
                                                  answer: response.headers, credentials: credentials) {
                    throw .refused(location: location, status: response.status, code: response.errorCode, fix: fix)
                }
                guard let unusable = accept(response) else { return response }
                failure = unusable
            case .success(let response):
                failure = "HTTP \(response.status)" + (response.errorCode.map { " \($0)" } ?? "")
                retryAfter = response.retryAfter
            // What this machine failed at (the answer could not be written) is not the store's doing.
            case .failure(let error) where error.reason == .local: throw .unreachable(location: location, detail: error.description)
            case .failure(let error): failure = error.description
            }
            if attempt == retry.attempts { throw .unreachable(location: location, detail: "\(failure) (after \(attempt) attempts)") }
            Thread.sleep(forTimeInterval: retry.delay(after: attempt, retryAfter: retryAfter))
        }
        preconditionFailure("the loop returns or throws")
    }
}
