import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The repository's fixtures folder.
public enum Fixtures {
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("fixtures").path
    }()

    public static func path(_ relative: String) -> String { root + "/" + relative }
}

/// The `runner` executable built next to the test bundle.
public enum RunnerBinary {
    public static let path: String = {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var folder = URL(fileURLWithPath: me).deletingLastPathComponent()
        // The test bundle may be a folder (…/runnerPackageTests.xctest/…): walk up to the products folder.
        while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("runner").path),
              folder.path != "/" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent("runner").path
    }()
}

public struct CommandResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// A temporary folder holding a job file, its state and its outputs; removed when released.
public final class Workspace: @unchecked Sendable {
    public let root: String

    public init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("runner-test-XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    public func path(_ relative: String) -> String { root + "/" + relative }

    /// Writes `job.json` (or another name) into the workspace and returns its path.
    @discardableResult
    public func writeJob(_ text: String, name: String = "job.json") throws -> String {
        let file = path(name)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    public func write(_ text: String, to relative: String) throws {
        try FileManager.default.createDirectory(atPath: (path(relative) as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try text.write(toFile: path(relative), atomically: true, encoding: .utf8)
    }

    /// Copies fixture files into `folder` (relative to the workspace).
    public func copyFixtures(_ names: [String], to folder: String) throws {
        try FileManager.default.createDirectory(atPath: path(folder), withIntermediateDirectories: true)
        for name in names {
            try FileManager.default.copyItem(atPath: Fixtures.path(name),
                                             toPath: path(folder + "/" + (name as NSString).lastPathComponent))
        }
    }

    /// Every regular file below `folder`, relative to it, sorted.
    public func files(in folder: String) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: path(folder)) else { return [] }
        var found: [String] = []
        while let entry = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path(folder + "/" + entry), isDirectory: &isDirectory), !isDirectory.boolValue {
                found.append(entry)
            }
        }
        return found.sorted()
    }

    public func modificationDate(_ relative: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path(relative)))?[.modificationDate] as? Date
    }

    /// Runs the built `runner` with `arguments` in the workspace and waits for it.
    public func run(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 300) throws -> CommandResult {
        let process = try start(arguments, environment: environment)
        return process.wait(timeout: timeout)
    }

    /// Runs `runner` as `run` does, and says how many CPU seconds it and its workers used: what a
    /// bound on work measures, since a busy machine stretches wall time but not CPU time.
    public func runCounting(_ arguments: [String]) throws -> (result: CommandResult, cpuSeconds: Double) {
        let times = path(".times-\(UUID().uuidString)")
        defer { unlink(times) }
        // bash's `times` prints the shell's user and system time, then its children's: `0m1.234s 0m0.056s`.
        let result = try RunningCommand("/bin/bash", arguments: ["-c", #""$0" "$@"; status=$?; times > "$TIMES"; exit $status"#,
                                                                  RunnerBinary.path] + arguments,
                                        directory: root, environment: ["TIMES": times]).wait()
        let children = try String(contentsOfFile: times, encoding: .utf8).split(separator: "\n").last ?? ""
        let seconds = children.split(separator: " ").map { field in
            field.dropLast().split(separator: "m").reduce(0.0) { $0 * 60 + (Double($1) ?? 0) }
        }
        return (result, seconds.reduce(0, +))
    }

    /// Runs `runner` as `run` does, fed `feed`'s output (a shell command) on its standard input, and
    /// says its peak resident memory in bytes (`/usr/bin/time`'s maximum RSS: what a bound on memory
    /// measures). Under `addressSpace` bytes, so a missing bound fails the test, not the machine.
    public func runMeasured(_ arguments: [String], feed: String? = nil,
                            addressSpace: Int? = nil) throws -> (result: CommandResult, peakBytes: Int) {
        let report = path(".peak-\(UUID().uuidString)")
        defer { unlink(report) }
        let cap = addressSpace.map { "ulimit -v \($0 >> 10); " } ?? ""
        let script = cap + (feed.map { "\($0) | " } ?? "") + #"/usr/bin/time -f %M -o "$REPORT" "$0" "$@""#
        let result = try RunningCommand("/bin/sh", arguments: ["-c", script, RunnerBinary.path] + arguments,
                                        directory: root, environment: ["REPORT": report]).wait()
        let kilobytes = (try? String(contentsOfFile: report, encoding: .utf8))?.split(separator: "\n").last.flatMap { Int($0) } ?? 0
        return (result, kilobytes << 10)
    }

    public func start(_ arguments: [String], environment: [String: String] = [:]) throws -> RunningCommand {
        try RunningCommand(arguments: arguments, directory: root, environment: environment)
    }
}

/// Polls until `condition` holds or `timeout` passes; true if it held. The bound is there so a
/// broken build fails instead of hanging, never to time what a test checks.
@discardableResult
public func eventually(timeout: Double = 300, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// CPU seconds the calling thread has used: a bound on in-process work that a busy machine does
/// not stretch, as it does wall time.
public func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// A `runner` process (or another program) started by a test, with its output captured in files.
public final class RunningCommand: @unchecked Sendable {
    public let process = Process()
    private let stdoutPath: String
    private let stderrPath: String

    public init(_ executable: String = RunnerBinary.path, arguments: [String], directory: String,
                environment: [String: String]) throws {
        let id = UUID().uuidString
        stdoutPath = NSTemporaryDirectory() + "runner-out-\(id)"
        stderrPath = NSTemporaryDirectory() + "runner-err-\(id)"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        unlink(stdoutPath)
        unlink(stderrPath)
    }

    public var pid: Int32 { process.processIdentifier }

    /// The processes it has started that are still alive (its workers), from /proc's stat files.
    public var children: [Int32] { Self.children(of: pid) }

    /// The processes `pid` has started that are still alive.
    public static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { candidate in
            // pid (comm) state ppid ...: comm may hold spaces, so count from its closing parenthesis.
            let stat = procFile("/proc/\(candidate)/stat")
            let fields = stat.range(of: ")", options: .backwards).map { stat[$0.upperBound...].split(separator: " ") } ?? []
            return fields.count > 1 && Int32(fields[1]) == pid
        }.sorted()
    }

    public var stdoutSoFar: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var stderrSoFar: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Polls until `condition` holds, the process ends, or `timeout` passes; true if it held.
    @discardableResult
    public func waitUntil(timeout: Double = 300, _ condition: () -> Bool) -> Bool {
        var ended = false
        let held = eventually(timeout: timeout) {
            if condition() { return true }
            ended = !process.isRunning
            return ended
        }
        return held && (!ended || condition())
    }

    public func wait(timeout: Double = 300) -> CommandResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let out = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return CommandResult(status: status, stdout: out, stderr: err)
    }
}
