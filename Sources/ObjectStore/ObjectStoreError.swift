import Foundation
import Synchronization
import Support

/// Why a bucket cannot be used at all: a configuration error of the whole run (wrong secret, no
/// access, wrong region, no such bucket, no credentials), said once with what to fix and never
/// blacklisted per object; or a store that stayed unreachable through the retries.
package enum ObjectStoreError: Error, Equatable, ExitCoded, CustomStringConvertible {
    case refused(location: String, status: Int, code: String?, fix: String)
    case unreachable(location: String, detail: String)
    case credentials(CredentialsError)

    package var exitCode: Int32 {
        if case .unreachable = self { return ExitStatus.storeUnavailable }
        return ExitStatus.storeConfiguration
    }

    package var description: String {
        switch self {
        case .refused(let location, let status, let code, let fix):
            "\(location): the object store refused: HTTP \(status)" + (code.map { " \($0)" } ?? "") + ": \(fix)"
        case .unreachable(let location, let detail): "\(location): the object store could not be reached: \(detail)"
        case .credentials(let error): "object store credentials: \(error)"
        }
    }

    /// A connection for requests to `location`: curl failing to set one up leaves the store unreachable.
    package static func connection(for location: String) throws(ObjectStoreError) -> HTTPConnection {
        do { return try HTTPConnection() } catch { throw .unreachable(location: location, detail: error.description) }
    }

    /// What to fix for a refusal that concerns the whole run, from S3's error `code` and the
    /// answer's headers (the region the store names in `x-amz-bucket-region`, its clock in `Date`);
    /// nil for a refusal of one object.
    package static func fix(status: Int, code: String?, bucket: String, region: String, answer headers: [String: String],
                            credentials: AWSCredentials?, now: Date = Date()) -> String? {
        let who = credentials.map(\.description) ?? "no credentials"
        switch (status, code) {
        case (_, "SignatureDoesNotMatch"?):
            return "the secret does not match the access key (\(who)): check AWS_SECRET_ACCESS_KEY or the profile's aws_secret_access_key"
        case (_, "InvalidAccessKeyId"?): return "the store knows no such access key (\(who))"
        case (_, "ExpiredToken"?), (_, "InvalidToken"?): return "the session token is expired or invalid (\(who)): get new credentials"
        case (_, "NoSuchBucket"?): return "there is no bucket \(bucket) at this endpoint"
        case (_, "RequestTimeTooSkewed"?):
            guard let clock = headers["date"].flatMap(HTTPDate.parse) else { return "this machine's clock is more than 15 minutes off the store's: set it right (NTP)" }
            let offset = Int(now.timeIntervalSince(clock).rounded())
            return "this machine's clock is \(abs(offset)) s \(offset > 0 ? "ahead of" : "behind") the store's (its Date: \(headers["date"]!)): set it right (NTP)"
        case (_, "AuthorizationHeaderMalformed"?), (_, "PermanentRedirect"?), (301, _), (_, "IllegalLocationConstraintException"?):
            let actual = headers["x-amz-bucket-region"].map { "the bucket is in \($0)" } ?? "the bucket is in another region"
            return "\(actual), not \(region): set region (and endpoint) to the bucket's"
        case (403, _):
            return "access denied to bucket \(bucket) (\(who)): allow s3:ListBucket and s3:GetObject (s3:PutObject, s3:DeleteObject to write)"
        case (400, _), (401, _): return "the request was refused as malformed or unauthenticated (\(who))"
        default: return nil
        }
    }
}

/// The run's credentials, resolved once through the chain (`AWSCredentials.resolve`) and again
/// when temporary ones come within five minutes of expiring. Every signed request asks here, so a
/// night longer than a web identity session keeps signing.
package enum SharedCredentials {
    private static let cache = Mutex<AWSCredentials?>(nil)

    package static func current(now: Date = Date()) throws(ObjectStoreError) -> AWSCredentials {
        let result: Result<AWSCredentials, CredentialsError> = cache.withLock { cached in
            if let cached, cached.expiration.map({ $0.timeIntervalSince(now) > 300 }) ?? true { return .success(cached) }
            do throws(CredentialsError) {
                cached = try AWSCredentials.resolve(now: now)
                return .success(cached!)
            } catch {
                // Still valid for a while: kept rather than failing the requests in flight.
                if let cached, let expiration = cached.expiration, expiration > now { return .success(cached) }
                return .failure(error)
            }
        }
        return try result.mapError(ObjectStoreError.credentials).get()
    }
}
