import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Tests/http-server/store.py on 127.0.0.1: an S3 store of the tests' own whose ListObjectsV2 lies
/// when told to, that checks SigV4 over each path exactly as it arrived and logs every raw request
/// line. Killed by its PID when released.
public final class LyingStore: @unchecked Sendable {
    private let process: Process
    public let port: Int
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    private let objectsFile: String

    /// `objects`: bucket → key → the file holding its bytes. Requests must be signed with `accessKey`/`secretKey`.
    /// `port`: listen there (a store started again where an earlier one stood, empty); 0: any free port.
    public init(objects: [String: [String: String]], accessKey: String, secretKey: String, port: Int = 0) throws {
        objectsFile = NSTemporaryDirectory() + "runner-store-\(UUID().uuidString).json"
        try JSONSerialization.data(withJSONObject: objects).write(to: URL(fileURLWithPath: objectsFile))
        (process, self.port) = try startServer("store.py", ["--objects", objectsFile, "--access-key", accessKey, "--secret", secretKey,
                                                           "--port", String(port)])
    }

    deinit {
        stop()
        unlink(objectsFile)
    }

    /// Kills the store by its PID: from now on its port refuses every connection.
    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The listing answers `times` times (-1: from now on) as `mode` says: truncated-no-token,
    /// repeat-token, garbage, outside-prefix, out-of-order, oversize (a page over 8 MiB), raw-keys
    /// (keys not URL-encoded, whatever was asked), outage (every PUT answered 503 SlowDown),
    /// outage-retry-after (the same, with `Retry-After: 1`), drop-put
    /// (the next `times` PUTs stored, then the connection dropped unanswered), skewed (every request
    /// refused as RequestTimeTooSkewed, the store's clock 20 minutes ahead), fail-multipart (every part
    /// and the abort of a multipart upload answered 500), or none.
    public func lie(_ mode: String, times: Int = -1) throws { _ = try loopbackGET(port: port, "/_lie/\(mode)/\(times)") }

    /// Every request line received since the start or the last `reset`, raw: `GET /photos/a%20b.jpg HTTP/1.1`.
    public func requests() throws -> [String] { try timedRequests().map(\.line) }

    /// `requests()` with the store's clock when each came (seconds).
    public func timedRequests() throws -> [(line: String, time: Double)] {
        let response = try loopbackGET(port: port, "/_requests")
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else { return [] }
        let pairs = (try JSONSerialization.jsonObject(with: Data(response[split.upperBound...])) as? [[Any]]) ?? []
        return pairs.compactMap { pair in (pair.first as? String).flatMap { line in (pair.last as? Double).map { (line, $0) } } }
    }

    public func reset() throws { _ = try loopbackGET(port: port, "/_reset") }
}
