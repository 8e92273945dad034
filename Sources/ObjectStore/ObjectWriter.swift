import Foundation
import Synchronization
import Support

/// Writes and deletes a run's objects a batch at a time, over up to `parallel` connections kept open
/// from batch to batch. An object larger than its part size goes up as a multipart upload; bodies are
/// read from their files as they are sent.
package final class ObjectWriter: Sendable {
    package enum Change: Sendable {
        /// Writes the file at `file` as the object, with its media type and `Cache-Control`.
        case put(ObjectURL, endpoint: S3Endpoint, file: String, mediaType: String, cacheControl: String, partSize: Int)
        case delete(ObjectURL, endpoint: S3Endpoint)

        var object: ObjectURL { switch self { case .put(let object, _, _, _, _, _), .delete(let object, _): object } }
        var endpoint: S3Endpoint { switch self { case .put(_, let endpoint, _, _, _, _), .delete(_, let endpoint): endpoint } }
    }

    /// Why a change was not made: this object alone (the store refused it, or its file could not be
    /// read), or the store for the whole run (`ObjectStoreError`).
    package enum Failure: Error, Equatable, CustomStringConvertible {
        case object(String)
        case store(ObjectStoreError)

        package var description: String {
            switch self {
            case .object(let reason): reason
            case .store(let error): error.description
            }
        }
    }

    private let retry: RetryPolicy
    private let idle = Mutex<[HTTPConnection]>([])

    package init(retry: RetryPolicy = .standard) { self.retry = retry }

    /// Makes every change, up to `parallel` at once; one result per change, in order.
    package func perform(_ changes: [Change], parallel: Int) -> [Failure?] {
        let results = Mutex([Failure?](repeating: nil, count: changes.count))
        let next = Atomic(0)
        let group = DispatchGroup()
        for _ in 0..<min(max(parallel, 1), changes.count) {
            group.enter()
            Thread { [self] in
                defer { group.leave() }
                while case let index = next.add(1, ordering: .relaxed).oldValue, index < changes.count {
                    let failure = make(changes[index])
                    results.withLock { $0[index] = failure }
                }
            }.start()
        }
        group.wait()
        return results.withLock { $0 }
    }

    private func make(_ change: Change) -> Failure? {
        let connection: HTTPConnection
        if let kept = idle.withLock({ $0.popLast() }) {
            connection = kept
        } else {
            do throws(ObjectStoreError) { connection = try ObjectStoreError.connection(for: change.object.description) } catch { return .store(error) }
        }
        defer { idle.withLock { $0.append(connection) } }
        let requests = ObjectRequests(request: StoreRequest(endpoint: change.endpoint, bucket: change.object.bucket,
                                                            location: change.object.description, retry: retry),
                                      object: change.object, connection: connection)
        do throws(Failure) {
            switch change {
            case .put(_, _, let file, let mediaType, let cacheControl, let partSize):
                let headers = ["Content-Type": mediaType, "Cache-Control": cacheControl]
                let body = try FileBody(file)
                if body.size > partSize {
                    try requests.multipart(body, partSize: partSize, headers: headers)
                } else {
                    _ = try requests.send("PUT", headers: headers, upload: try body.range(0, body.size))
                }
            case .delete:
                // Deleting a key that is already gone succeeds (204): pruning twice is harmless.
                _ = try requests.send("DELETE", orMissing: true)
            }
            return nil
        } catch {
            return error
        }
    }
}

/// A staged file read by range, for a body or a part.
private final class FileBody {
    let descriptor: Int32
    let size: Int
    let path: String

    init(_ path: String) throws(ObjectWriter.Failure) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        var info = stat()
        guard descriptor >= 0, fstat(descriptor, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            if descriptor >= 0 { close(descriptor) }
            throw .object("cannot read \(path): \(reason)")
        }
        size = Int(info.st_size)
    }

    deinit { close(descriptor) }

    /// `count` bytes from `offset`, to be sent from the file, and their payload hash.
    func range(_ offset: Int, _ count: Int) throws(ObjectWriter.Failure) -> (range: FileRange, hash: String) {
        let range = FileRange(descriptor: descriptor, offset: Int64(offset), length: count)
        guard let hash = SigV4.payloadHash(of: range) else { throw .object("cannot read \(path): \(String(cString: strerror(errno)))") }
        return (range, hash)
    }
}

/// The requests of one change to one object, over one connection, each a success or this
/// object's failure.
private struct ObjectRequests {
    let request: StoreRequest
    let object: ObjectURL
    let connection: HTTPConnection

    /// S3's multipart upload: create, a part at a time, complete; aborted on failure so the store
    /// keeps no parts.
    func multipart(_ body: FileBody, partSize: Int, headers: [String: String]) throws(ObjectWriter.Failure) {
        let created = try send("POST", query: ["uploads": ""], headers: headers)
        guard let uploadID = XMLFields.first(of: ["UploadId"], in: created.body)["UploadId"] else {
            throw .object("the object store started no multipart upload: HTTP \(created.status)")
        }
        do throws(ObjectWriter.Failure) {
            var parts: [String] = []
            for (number, offset) in stride(from: 0, to: body.size, by: partSize).enumerated() {
                let part = try body.range(offset, min(partSize, body.size - offset))
                let answer = try send("PUT", query: ["partNumber": String(number + 1), "uploadId": uploadID], upload: part)
                guard let etag = answer.headers["etag"] else { throw .object("the object store gave part \(number + 1) no ETag") }
                parts.append("<Part><PartNumber>\(number + 1)</PartNumber><ETag>\(etag)</ETag></Part>")
            }
            let document = "<CompleteMultipartUpload>\(parts.joined())</CompleteMultipartUpload>"
            _ = try send("POST", query: ["uploadId": uploadID], body: Array(document.utf8))
        } catch {
            // The store keeps an unfinished upload's parts (and bills them) until it is aborted.
            do throws(ObjectWriter.Failure) { _ = try send("DELETE", query: ["uploadId": uploadID]) } catch let abort {
                let note = "; aborting multipart upload \(uploadID) failed too (\(abort)): its parts stay until the bucket's lifecycle rule for incomplete uploads removes them"
                switch error {
                case .object(let reason): throw .object(reason + note)
                case .store(.unreachable(let location, let detail)): throw .store(.unreachable(location: location, detail: detail + note))
                case .store: throw error
                }
            }
            throw error
        }
    }

    /// One signed request: a success, or (`orMissing`, also a 404) this object's failure in the
    /// store's words; S3 can answer a completion 200 and still fail it, in an error document.
    func send(_ method: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8]? = nil,
              upload part: (range: FileRange, hash: String)? = nil, orMissing: Bool = false) throws(ObjectWriter.Failure) -> HTTPResponse {
        let payloadHash = part?.hash ?? SigV4.payloadHash(of: body ?? [])
        let sent: HTTPRequest.Body = part.map { .file($0.range) } ?? body.map { .bytes($0) } ?? .none
        let response: HTTPResponse
        do {
            response = try request.send(on: connection) { credentials in
                request.endpoint.signed(method, bucket: object.bucket, key: object.key, query: query, headers: headers,
                                        payloadHash: payloadHash, credentials: credentials).http(sent)
            }
        } catch {
            throw .store(error)
        }
        guard (200..<300).contains(response.status) && response.errorCode == nil || orMissing && response.status == 404 else {
            let fields = XMLFields.first(of: ["Code", "Message"], in: response.body)
            throw .object("the object store refused it: HTTP \(response.status)" + (fields["Code"].map { " \($0)" } ?? "")
                          + (fields["Message"].map { ": \($0)" } ?? ""))
        }
        return response
    }
}
