import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The endpoint server in Tests/http-server/server.py, started on 127.0.0.1 by a test and
/// stopped when released. It counts requests per path so tests can assert what was fetched.
public final class HTTPTestServer: @unchecked Sendable {
    private let process: Process
    public let port: Int

    /// `port`: listen there (a server started again where an earlier one stood); 0: any free port.
    /// `upstream` (`127.0.0.1:PORT`): a counting proxy in front of that server, `/_` paths aside.
    public init(image: String = Fixtures.path("extra/ladybird.jpg"), port: Int = 0, upstream: String? = nil) throws {
        (process, self.port) = try startServer("server.py", ["--image", image, "--variant", "other=" + Fixtures.path("extra/yellow-flower.jpg"),
                                                             "--port", String(port)] + (upstream.map { ["--upstream", $0] } ?? []))
    }

    deinit {
        // SIGKILL: the test process may pass an ignored SIGTERM on to its children.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    public struct Stats {
        /// Requests per path.
        public let counts: [String: Int]
        /// Requests per path that carried If-None-Match or If-Modified-Since.
        public let conditional: [String: Int]
        /// The headers of the last request per path.
        public let headers: [String: [String: String]]
        /// Most /busy/ requests the server had in flight at once.
        public let maxInFlight: Int
        /// Requests per method and path (`PUT /photos/a.webp`, queries included).
        public let methods: [String: Int]
    }

    public func stats() throws -> Stats {
        let data = try get("/_stats")
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        return Stats(counts: object["counts"] as? [String: Int] ?? [:],
                     conditional: object["conditional"] as? [String: Int] ?? [:],
                     headers: object["headers"] as? [String: [String: String]] ?? [:],
                     maxInFlight: object["maxInFlight"] as? Int ?? 0, methods: object["methods"] as? [String: Int] ?? [:])
    }

    public func reset() throws { _ = try get("/_reset") }

    /// How `/img/` answers from now on: "503", "hang" (headers never come), or "none" (served again).
    public func outage(_ mode: String) throws { _ = try get("/_outage/" + mode) }

    /// `/img/<anything>` serves the variant `name` (`other`: yellow-flower.jpg) from now on, under
    /// new validators: the origin's content changed, so a revalidation gets the new bytes.
    public func serve(_ name: String) throws { _ = try get("/_serve/" + name) }

    /// The body of a plain GET to the server (`loopbackGET`), independent of the client under test.
    private func get(_ path: String) throws -> Data {
        let response = try loopbackGET(port: port, path)
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else { return Data() }
        return response[split.upperBound...]
    }
}

/// Starts one of Tests/http-server's Python servers on 127.0.0.1 and waits until it says where it
/// listens (its port file, written whole, then renamed), or exits.
func startServer(_ script: String, _ arguments: [String]) throws -> (Process, port: Int) {
    let process = Process()
    let path = (Fixtures.root as NSString).deletingLastPathComponent + "/Tests/http-server/" + script
    let portFile = NSTemporaryDirectory() + "runner-http-\(UUID().uuidString)"
    defer { unlink(portFile) }
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", path, "--port-file", portFile] + arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    var port: Int?
    eventually {
        port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
        return port != nil || !process.isRunning
    }
    guard let port else {
        process.terminate()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "test server \(script) did not start"])
    }
    return (process, port)
}

/// A plain HTTP/1.0 GET over a socket to 127.0.0.1: the whole response, status line and headers
/// included (empty when the server closed without one). Independent of the client under test.
public func loopbackGET(port: Int, _ path: String) throws -> Data {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw CocoaError(.fileReadUnknown) }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw CocoaError(.fileReadUnknown) }
    let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
    var response = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        response.append(contentsOf: buffer[..<count])
    }
    return response
}
