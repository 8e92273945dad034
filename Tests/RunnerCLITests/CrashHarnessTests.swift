import Foundation
import Testing
import TestSupport

@Suite("Nothing is ever lost: the crash harness, small")
struct CrashHarnessTests {
    /// `make crash-test` runs Tests/crash/crash_test.py with 200 kills over 2,000 items on the release
    /// build; this runs it with 20 kills over 300 items (and 6 worker kills) on the built binary.
    @Test("20 SIGKILLs of the runner across its phases and 6 worker kills: every check holds after each")
    func twentyKills() throws {
        let repository = (Fixtures.root as NSString).deletingLastPathComponent
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repository + "/Tests/crash/crash_test.py", "--kills", "20", "--items", "300",
                             "--worker-kills", "6", "--seed", "14", "--time-limit", "420", "--runner", RunnerBinary.path]
        process.currentDirectoryURL = URL(fileURLWithPath: repository)
        let output = NSTemporaryDirectory() + "runner-crash-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { unlink(output) }
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = process.standardOutput
        try process.run()
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("crash test passed") && text.contains("runner kills: 20"), "\(text)")
    }
}
