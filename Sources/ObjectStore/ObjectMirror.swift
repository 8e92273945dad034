import Foundation
import Support

/// One local file kept in a bucket as one object, and written there only over the version it was
/// last read or written as (S3's conditional writes, `If-Match` and `If-None-Match: *`): of two
/// writers that started from one version, the second finds the object changed and loses. The
/// body goes in one request (up to S3's 5 GB), streamed from and to the file.
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

    /// GETs the object into `path` (streamed to a file beside it, then renamed over it) unless it
    /// is still the version `known` names.
    package func fetch(into path: String, unless known: String?) throws -> Fetched {
        let partial = path + ".partial"
        let file = try Self.open(partial, O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(file); unlink(partial) }
        let request = StoreRequest(endpoint: endpoint, bucket: object.bucket, location: object.description, retry: retry)
        let response = try request.send(on: try HTTPExchange.Connection(), saveTo: file) { credentials in
            endpoint.signed("GET", bucket: object.bucket, key: object.key, headers: known.map { ["If-None-Match": $0] } ?? [:],
                            credentials: credentials)
        }
        switch response.status {
        case 304: return .unchanged
        case 404: return .absent
        case 200:
            guard let etag = response.headers["etag"] else { throw refusal(response, "it has no ETag") }
            guard fsync(file) == 0, rename(partial, path) == 0 else { throw ObjectMirrorFileError(path: path, number: errno) }
            return .fetched(etag: etag)
        default: throw refusal(response, "it could not be read")
        }
    }

    /// PUTs the file at `path` over the version `etag` names, or with none only where there is no
    /// object yet. The body is sent from the file, its hash taken where it is mapped.
    package func store(from path: String, over etag: String?) throws -> Stored {
        let file = try Self.open(path, O_RDONLY)
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw ObjectMirrorFileError(path: path, number: errno) }
        let body = HTTPExchange.FileRange(descriptor: file, offset: 0, length: Int(info.st_size))
        guard let hash = SigV4.payloadHash(of: body) else { throw ObjectMirrorFileError(path: path, number: errno) }
        let request = StoreRequest(endpoint: endpoint, bucket: object.bucket, location: object.description, retry: retry)
        let condition = etag.map { ["If-Match": $0] } ?? ["If-None-Match": "*"]
        let response = try request.send(on: try HTTPExchange.Connection(), upload: body) { credentials in
            endpoint.signed("PUT", bucket: object.bucket, key: object.key, headers: condition.merging(["Content-Type": "application/vnd.sqlite3"]) { $1 },
                            payloadHash: hash, credentials: credentials)
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

    private static func open(_ path: String, _ flags: Int32) throws -> Int32 {
        let file = Glibc.open(path, flags | O_CLOEXEC, 0o644)
        guard file >= 0 else { throw ObjectMirrorFileError(path: path, number: errno) }
        return file
    }

    private func refusal(_ response: HTTPExchange.Response, _ what: String) -> ObjectStoreError {
        .refused(location: object.description, status: response.status, code: response.errorCode, fix: what)
    }
}

/// The local side of a mirrored file failed: its path and errno.
package struct ObjectMirrorFileError: Error, CustomStringConvertible {
    package let path: String
    package let number: Int32
    package var description: String { "\(path): \(String(cString: strerror(number)))" }
}
