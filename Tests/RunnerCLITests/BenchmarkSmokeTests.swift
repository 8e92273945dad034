import Foundation
import Testing
import TestSupport

@Suite("make bench-quick cannot rot")
struct BenchmarkSmokeTests {
    @Test("the quick benchmark runs runner and the C reference, and the downloads set, and checks their outputs")
    func quickBenchmark() throws {
        let repository = (Fixtures.root as NSString).deletingLastPathComponent
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repository + "/bench/bench.py", "--quick", "--runner", RunnerBinary.path]
        process.currentDirectoryURL = URL(fileURLWithPath: repository)
        let output = NSTemporaryDirectory() + "runner-bench-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { unlink(output) }
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = process.standardOutput
        try process.run()
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("| runner, ") && text.contains("20/20"), "\(text)")
        #expect(text.contains("| runner run --download-only") && text.contains("| runner run (2 worker processes"), "\(text)")
    }
}
