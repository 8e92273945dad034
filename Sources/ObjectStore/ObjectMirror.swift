import Foundation
import Support

/// One object written only over the version it was last read or written as (S3's conditional
/// writes, `If-Match` and `If-None-Match: *`): of two writers that started from one version, the
/// second finds the object changed and loses. A local file kept as the object (the state) goes
/// in one request (up to S3's 5 GB), streamed from and to the file; a small one (a lease) from memory.
package struct ObjectMirror: Sendable {
    package let endpoint: S3Endpoint
    package let object: ObjectURL
    package let retry: RetryPolicy

    package init(endpoint: S3Endpoint, object: ObjectURL, retry: RetryPolicy) {
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
        let response = try send("GET", headers: known.map { ["If-None-Match": $0] } ?? [:],
                                answer: .spilling(inMemory: 0, limit: .max, buffer: [], open: { file })) {
            // A retry after part of the answer was written starts the file over.
            _ = ftruncate(file, 0)
            _ = lseek(file, 0, SEEK_SET)
        }
        if response.status == 304 { return .unchanged }
        guard let etag = try etag(of: response) else { return .absent }
        guard fsync(file) == 0, rename(partial, path) == 0 else { throw ObjectMirrorFileError(path: path, number: errno) }
        return .fetched(etag: etag)
    }

    /// The object's bytes (a small document: up to `HTTPResponse.documentLimit`) and its ETag; nil
    /// when there is none.
    package func read() throws -> (bytes: [UInt8], etag: String)? {
        let response = try send("GET")
        return try etag(of: response).map { (response.body, $0) }
    }

    /// A GET's ETag; nil when there is no such object.
    private func etag(of response: HTTPResponse) throws -> String? {
        switch response.status {
        case 404: return nil
        case 200:
            guard let etag = response.headers["etag"] else { throw refusal(response, "it has no ETag") }
            return etag
        default: throw refusal(response, "it could not be read")
        }
    }

    /// PUTs the file at `path` over the version `etag` names, or with none only where there is no
    /// object yet. The body is sent from the file, its hash taken where it is mapped.
    package func store(from path: String, over etag: String?, mediaType: String) throws -> Stored {
        let file = try Self.open(path, O_RDONLY)
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw ObjectMirrorFileError(path: path, number: errno) }
        let body = FileRange(descriptor: file, offset: 0, length: Int(info.st_size))
        guard let hash = SigV4.payloadHash(of: body), let md5 = SigV4.md5(of: body) else { throw ObjectMirrorFileError(path: path, number: errno) }
        return try put(.file(body), hash: hash, md5: md5, over: etag, mediaType: mediaType)
    }

    /// PUTs `bytes` as `store(from:over:mediaType:)` does a file.
    package func store(_ bytes: [UInt8], over etag: String?, mediaType: String) throws -> Stored {
        try put(.bytes(bytes), hash: SigV4.payloadHash(of: bytes), md5: bytes.withUnsafeBytes(SigV4.md5), over: etag, mediaType: mediaType)
    }

    package func delete() throws {
        let response = try send("DELETE")
        guard (200..<300).contains(response.status) || response.status == 404 else { throw refusal(response, "it could not be deleted") }
    }

    private func put(_ body: HTTPRequest.Body, hash: String, md5: String, over etag: String?, mediaType: String) throws -> Stored {
        let condition = etag.map { ["If-Match": $0] } ?? ["If-None-Match": "*"]
        let connection = try ObjectStoreError.connection(for: object.description)
        let response = try send("PUT", headers: condition.merging(["Content-Type": mediaType]) { $1 }, payloadHash: hash, body, on: connection)
        switch response.status {
        case 200..<300:
            guard let stored = response.headers["etag"] else { throw refusal(response, "the store gave no ETag") }
            return .stored(etag: stored)
        // 409: a conditional write that raced another (S3's ConditionalRequestConflict). Either may
        // answer a retry whose first attempt landed (the connection dropped before its answer): the
        // object is then these very bytes (a single PUT's ETag is their MD5), and this write stands.
        case 412, 409:
            let head = try send("HEAD", on: connection)
            guard head.status == 200, let stored = head.headers["etag"], stored.trimmingCharacters(in: ["\""]) == md5 else { return .conflict }
            return .stored(etag: stored)
        default: throw refusal(response, "it could not be written")
        }
    }

    /// One request on the object, signed anew and retried as `StoreRequest` does; `attempt` runs
    /// before each attempt.
    private func send(_ method: String, headers: [String: String] = [:], payloadHash: String = SigV4.unsignedPayload,
                      _ body: HTTPRequest.Body = .none, answer: HTTPRequest.Answer = .memory(limit: HTTPResponse.documentLimit),
                      on connection: HTTPConnection? = nil, attempt: () -> Void = {}) throws -> HTTPResponse {
        let request = StoreRequest(endpoint: endpoint, bucket: object.bucket, location: object.description, retry: retry)
        return try request.send(on: try connection ?? ObjectStoreError.connection(for: object.description)) { credentials in
            attempt()
            return endpoint.signed(method, bucket: object.bucket, key: object.key, headers: headers, payloadHash: payloadHash,
                                   credentials: credentials).http(body, answer: answer)
        }
    }

    private static func open(_ path: String, _ flags: Int32) throws -> Int32 {
        let file = Glibc.open(path, flags | O_CLOEXEC, 0o644)
        guard file >= 0 else { throw ObjectMirrorFileError(path: path, number: errno) }
        return file
    }

    private func refusal(_ response: HTTPResponse, _ what: String) -> ObjectStoreError {
        .refused(location: object.description, status: response.status, code: response.errorCode, fix: what)
    }
}

/// The local side of a mirrored file failed: its path and errno.
package struct ObjectMirrorFileError: Error, CustomStringConvertible {
    package let path: String
    package let number: Int32
    package var description: String { "\(path): \(String(cString: strerror(number)))" }
}
