import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's `chromium`, headless: what a person's browser makes of a page runner wrote.
public enum Chromium {
    public static let path = "/usr/bin/chromium"

    /// Installs chromium with apt when it is missing (once per test process; the test machines run
    /// as root). nil when it is there, else why it cannot be.
    public static let unavailable: String? = {
        if FileManager.default.isExecutableFile(atPath: path) { return nil }
        guard getuid() == 0 else { return "chromium is not installed and installing it needs root: apt-get install chromium" }
        let environment = ["DEBIAN_FRONTEND": "noninteractive"]
        let install = ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", "chromium"]
        // A machine that has never fetched the package lists needs `apt-get update` first.
        if execute("/usr/bin/env", install, environment: environment, timeout: 1800).status != 0 {
            _ = execute("/usr/bin/env", ["apt-get", "update", "-qq", "-o", "DPkg::Lock::Timeout=600"], environment: environment, timeout: 600)
            let retried = execute("/usr/bin/env", install, environment: environment, timeout: 1800)
            if retried.status != 0 {
                return "chromium could not be installed (apt-get install chromium: \(retried.stderr.suffix(300)))"
            }
        }
        return FileManager.default.isExecutableFile(atPath: path) ? nil : "apt-get installed chromium but \(path) is missing"
    }()

    /// The DOM after the page's scripts ran and its images loaded (within `budget` ms of virtual time).
    public static func dom(of file: String, width: Int = 1280, height: Int = 1800, budget: Int = 3000) throws -> String {
        try run(["--dump-dom", "--window-size=\(width),\(height)", fileURL(file)], budget: budget)
    }

    /// Saves a PNG of the page's first `width` × `height` pixels.
    public static func screenshot(of file: String, to png: String, width: Int = 1280, height: Int = 1800, budget: Int = 3000) throws {
        try? FileManager.default.removeItem(atPath: png)
        _ = try run(["--screenshot=\(png)", "--window-size=\(width),\(height)", fileURL(file)], budget: budget)
        guard FileManager.default.fileExists(atPath: png) else { throw Failure(message: "chromium wrote no screenshot to \(png)") }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    private static func fileURL(_ file: String) -> String { URL(fileURLWithPath: file).absoluteString }

    private static func run(_ arguments: [String], budget: Int) throws -> String {
        if let unavailable { throw Failure(message: unavailable) }
        // A profile of its own, so concurrent headless browsers on the machine never share one.
        let profile = NSTemporaryDirectory() + "runner-chromium-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let result = execute(path, ["--headless=new", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                                    "--user-data-dir=\(profile)", "--virtual-time-budget=\(budget)"] + arguments,
                             environment: [:], timeout: 300)
        guard result.status == 0 else { throw Failure(message: "chromium exited \(result.status): \(result.stderr.suffix(500))") }
        return result.stdout
    }

    private static func execute(_ program: String, _ arguments: [String], environment: [String: String],
                                timeout: Double) -> CommandResult {
        do {
            return try RunningCommand(program, arguments: arguments, directory: NSTemporaryDirectory(), environment: environment)
                .wait(timeout: timeout)
        } catch {
            return CommandResult(status: -1, stdout: "", stderr: "\(program): \(error)")
        }
    }
}

/// Files the tests keep for a person to look at, under `.build/test-artifacts/`.
public enum TestArtifacts {
    public static func path(_ name: String) throws -> String {
        let folder = URL(fileURLWithPath: Fixtures.root).deletingLastPathComponent().appendingPathComponent(".build/test-artifacts").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder + "/" + name
    }
}
