import Foundation
import GRDB
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The fuzzers against the real binary. `make fuzz` runs 300 `runner validate` cases, 60
/// `runner run` cases and 30 list-file runs (RUNNER_FUZZ_BINARY_CASES, _RUN_CASES, _LIST_RUNS);
/// the test suite a few of each.
@Suite("Fuzzing the runner binary", .serialized, .timeLimit(.minutes(30)))
struct FuzzCLITests {
    struct Outcome {
        let status: Int32
        let signal: Int32?
        let seconds: Double
        let stderr: String
        /// The peak resident memory of runner or of one of its workers.
        let peakBytes: Int
    }

    /// The most memory one runner process of a case may take (`runner validate` of a case at the
    /// job-file limit takes about 120 MiB), but for a worker, which may map what its job's limits
    /// let it (`Limits.workerAddressSpace`: a 4,000 px enlargement turned 30° takes 1.2 GB).
    static let largestCasePeak = 1 << 30

    /// Runs the binary in `folder` with its address space capped at 6 GB (a fuzzed size must not
    /// take the machine down) and each process's CPU time at `cpuLimit` seconds (SIGXCPU: a busy
    /// machine does not stretch it), measured by `/usr/bin/time`; status -1 when it was still
    /// blocked after 300 s.
    static func runBinary(_ arguments: [String], in folder: String, cpuLimit: Int) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", #"ulimit -v 6000000; ulimit -t \#(cpuLimit); exec /usr/bin/time -f %M -o "$PEAK" "$0" "$@""#,
                             RunnerBinary.path] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let errors = NSTemporaryDirectory() + "runner-fuzz-stderr-\(UUID().uuidString)"
        let peak = errors + "-peak"
        process.environment = ProcessInfo.processInfo.environment.merging(["PEAK": peak]) { $1 }
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        defer { unlink(errors); unlink(peak) }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: errors)
        let began = Date()
        try process.run()
        while process.isRunning && Date().timeIntervalSince(began) < 300 { usleep(5_000) }
        let timedOut = process.isRunning
        if timedOut {
            // runner first: it would outlive time.
            for child in RunningCommand.children(of: process.processIdentifier) { kill(child, SIGKILL) }
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        // time's report: `Command terminated by signal 6` (then it exits 128 + 6) or `... status 2`, then the peak in KB.
        let report = ((try? String(contentsOfFile: peak, encoding: .utf8)) ?? "").split(separator: "\n")
        let signal = report.first { $0.hasPrefix("Command terminated by signal ") }.flatMap { Int32($0.split(separator: " ").last ?? "") }
        return Outcome(status: timedOut ? -1 : signal ?? process.terminationStatus, signal: signal,
                       seconds: Date().timeIntervalSince(began), stderr: String(stderr.suffix(600)),
                       peakBytes: (report.last.flatMap { Int($0) } ?? 0) << 10)
    }

    /// A problem when runner, or one of `job`'s workers, took more than it may.
    static func memoryProblem(_ outcome: Outcome, case index: Int, job: Job? = nil) -> String? {
        let workers = job?.limits.workerAddressSpace(threadsPerImage: ProcessInfo.processInfo.activeProcessorCount) ?? 0
        let allowed = max(largestCasePeak, workers)
        return outcome.peakBytes <= allowed ? nil : "case \(index): runner took \(outcome.peakBytes >> 20) MiB, over the \(allowed >> 20) MiB it may"
    }

    /// Paths `changed` may touch: inside one of `roots`, one of `files`, or a folder on the way to them.
    static func outside(_ changed: [String], roots: [String], files: [String]) -> [String] {
        changed.filter { path in
            if roots.contains(where: { BytePath.isInside(path, root: $0) || BytePath.normalize($0) == BytePath.normalize(path) }) { return false }
            if files.contains(where: { BytePath.normalize($0) == BytePath.normalize(path) }) { return false }
            // A folder created on the way to a root or file.
            let folder = BytePath.normalize(path) + [UInt8(ascii: "/")]
            return !(roots + files).contains { BytePath.normalize($0).starts(with: folder) }
        }
    }

    static func remove(_ paths: [String]) {
        for path in paths.sorted(by: { $0.utf8.count > $1.utf8.count }) { _ = unlink(path); _ = rmdir(path) }
    }

    @Test("runner validate on mutated job files: exit 0 or 2, no signal, no hang, nothing written")
    func validateMutations() throws {
        let cases = FuzzSettings.count("BINARY_CASES", default: 30)
        let sandbox = try FuzzSandbox()
        let mutator = JobFileMutator(seeds: try FuzzSandbox.seedJobs(), ops: try FuzzSandbox.pool("ops"),
                                     formats: try FuzzSandbox.pool("formats"), sandbox: sandbox.root)
        var rng = FuzzRandom(seed: FuzzSettings.seed &+ 2)
        var counts: [Int32: Int] = [:], largestPeak = 0
        var problems: [String] = []
        for index in 0..<cases {
            let text = mutator.makeCase(&rng)
            // Some cases are not UTF-8 at all, or are cut in the middle of a character.
            var data = Data(text.utf8)
            if rng.chance(0.05) { data.insert(rng.pick([0xff, 0xc3, 0x80, 0xed]), at: rng.below(data.count + 1)) }
            try data.write(to: URL(fileURLWithPath: sandbox.jobPath))
            let before = TreeSnapshot(sandbox.root)
            let outcome = try Self.runBinary(["validate", "jobs/job.json"], in: sandbox.root, cpuLimit: 60)
            counts[outcome.status, default: 0] += 1
            largestPeak = max(largestPeak, outcome.peakBytes)
            if let problem = Self.memoryProblem(outcome, case: index) { problems.append(problem) }
            if outcome.signal != nil || ![0, 2].contains(outcome.status) {
                problems.append("case \(index): exit \(outcome.status) signal \(outcome.signal ?? 0) after \(outcome.seconds) s: \(outcome.stderr)")
            }
            let written = TreeSnapshot(sandbox.root).changes(since: before)
            if !written.isEmpty { problems.append("case \(index): validate wrote \(written.prefix(3))") }
        }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(3).joined(separator: "\n"))")
        print("job-file fuzz, runner validate: \(cases) cases (seed \(FuzzSettings.seed &+ 2)): exit codes \(counts.sorted { $0.key < $1.key }), "
              + "peak RSS at most \(largestPeak >> 20) MiB")
    }

    /// A small job over the sandbox's photos and one URL, whose output chains two to four steps from
    /// the tests and a format from the tests, for `runner run` cases.
    static func runSeed(_ rng: inout FuzzRandom, ops: [FuzzJSON], formats: [FuzzJSON], url: String) -> FuzzJSON {
        let chain = (0..<(2 + rng.below(3))).map { _ in rng.pick(ops) }
        return .object([
            ("version", .number("1")),
            ("sources", .array([.object([("path", .string("../photos")), ("recursive", .bool(true))]),
                                .object([("url", .string(url))])])),
            ("outputs", .array([.object([("name", .string("r")), ("path", .string("../out/{dir}/{stem}-{ext}")),
                                         ("chain", .array(chain)), ("format", rng.pick(formats))])])),
            ("concurrency", .object([("process", .number("1")), ("download", .number("2"))])),
            ("limits", .object([("maxPixels", .number("268402689")), ("frames", .number("10"))])),
            ("http", .object([("timeout", .number("10")), ("connectTimeout", .number("5")), ("lowSpeedTime", .number("5")),
                              ("lowSpeedLimit", .number("1")), ("maxRedirects", .number("2")), ("revalidate", .string("always"))])),
            ("retry", .object([("attempts", .number("1")), ("initialDelay", .number("0")), ("maxDelay", .number("0"))])),
            ("state", .string("../state/run.sqlite")),
        ])
    }

    @Test("runner run on gently mutated jobs: exit 0, 1 or 2, no signal, no crashed worker, writes only where the job says")
    func runMutations() throws {
        let cases = FuzzSettings.count("RUN_CASES", default: 6)
        let sandbox = try FuzzSandbox()
        let server = try HTTPTestServer()
        let ops = try FuzzSandbox.pool("ops"), formats = try FuzzSandbox.pool("formats")
        var rng = FuzzRandom(seed: FuzzSettings.seed &+ 3)
        var counts: [Int32: Int] = [:], largestPeak = 0
        var skipped = 0
        var problems: [String] = []
        for index in 0..<cases {
            // Most cases are ones runner accepts (tried until Job.parse takes one), so the run gets to the workers.
            var text = ""
            let wantAccepted = rng.chance(0.8)
            for _ in 0..<50 {
                let seed = Self.runSeed(&rng, ops: ops, formats: formats, url: server.url("/img/r.jpg"))
                text = JobFileMutator(seeds: [seed], ops: ops, formats: formats, sandbox: sandbox.root)
                    .makeGentleCase(&rng, numbers: rng.chance(0.6))
                if !wantAccepted || (try? Job.parse(text: text, filePath: sandbox.jobPath)) != nil { break }
            }
            try text.write(toFile: sandbox.jobPath, atomically: false, encoding: .utf8)
            // Where this job may write, as runner itself reads it; a case that points outside the sandbox is skipped.
            var roots: [String] = [], files: [String] = []
            let job = try? Job.parse(text: text, filePath: sandbox.jobPath)
            if let job {
                roots = job.outputs.map(\.template.root) + [job.remote.cacheDirectory]
                files = ["", "-wal", "-shm", "-journal", ".lock"].map { job.statePath + $0 }
                guard (roots + files).allSatisfy({ BytePath.isInside($0, root: sandbox.root) }) else { skipped += 1; continue }
            }
            let before = TreeSnapshot(sandbox.root)
            let outcome = try Self.runBinary(["run", "jobs/job.json"], in: sandbox.root, cpuLimit: 120)
            counts[outcome.status, default: 0] += 1
            largestPeak = max(largestPeak, outcome.peakBytes)
            if let problem = Self.memoryProblem(outcome, case: index, job: job) { problems.append(problem) }
            if outcome.signal != nil || ![0, 1, 2].contains(outcome.status) {
                problems.append("case \(index): exit \(outcome.status) signal \(outcome.signal ?? 0) after \(outcome.seconds) s: \(outcome.stderr)\n\(text)")
            }
            // (The state path may name any file, a photo or a folder: only a state database is read.)
            if let state = files.first, [0, 1].contains(outcome.status),
               let crashed = try? DatabaseQueue(path: state).read({
                   try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item WHERE error_kind = 'crashed'") ?? 0
               }), crashed > 0 {
                problems.append("case \(index): \(crashed) items crashed their worker\n\(text)")
            }
            let changed = TreeSnapshot(sandbox.root).changes(since: before)
            let stray = Self.outside(changed, roots: roots, files: files)
            if !stray.isEmpty { problems.append("case \(index): wrote outside its outputs: \(stray.prefix(3))\n\(text)") }
            Self.remove(changed)
        }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(3).joined(separator: "\n"))")
        print("job-file fuzz, runner run: \(cases) cases (seed \(FuzzSettings.seed &+ 3)): exit codes "
              + "\(counts.sorted { $0.key < $1.key }), \(skipped) skipped (they named places outside the sandbox), peak RSS at most \(largestPeak >> 20) MiB")
    }

    /// A job over lists/fuzz.txt and `urls`, with one output per template.
    static func listJob(templates: [String], urls: [String]) -> String {
        let outputs = templates.enumerated().map { position, template in
            FuzzJSON.object([("name", .string("o\(position)")), ("path", .string(template)),
                             ("chain", .array([.object([("op", .string("thumbnail")), ("width", .number("8")), ("fit", .string("inside"))])])),
                             ("format", .object([("type", .string("png"))]))])
        }
        let sources = [FuzzJSON.object([("list", .string("../lists/fuzz.txt"))])] + urls.map { .object([("url", .string($0))]) }
        return FuzzJSON.object([("version", .number("1")), ("sources", .array(sources)), ("outputs", .array(outputs)),
                                ("retry", .object([("attempts", .number("1"))])), ("state", .string("../state/list.sqlite"))]).text
    }

    @Test("list files and URLs with traversal, %2e%2e, NUL, CRLF, long lines: runs write only inside the templates' roots and never touch a source")
    func hostileListRuns() throws {
        let runs = FuzzSettings.count("LIST_RUNS", default: 3)
        let sandbox = try FuzzSandbox()
        let server = try HTTPTestServer()
        let material = PathMaterial(sandbox: sandbox.root, urlBase: server.url("/img/"))
        let image = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("extra/ladybird.jpg")))
        var rng = FuzzRandom(seed: FuzzSettings.seed &+ 4)
        var problems: [String] = []
        var sourcesMade = 0
        var counts: [Int32: Int] = [:]
        for index in 0..<runs {
            let listFolder = sandbox.root + "/lists"
            // Most runs use lists and templates runner accepts as a whole (tried in process until
            // planning passes), so outputs are written; the rest as they come.
            var lines: [String] = [], templates: [String] = [], extraURLs: [String] = []
            let wantAccepted = rng.chance(0.8)
            for _ in 0..<50 {
                lines = (0..<(4 + rng.below(12))).map { _ in material.line(&rng) }
                templates = (0..<(1 + rng.below(2))).map { _ in material.template(&rng) }
                extraURLs = (0..<rng.below(3)).map { _ in material.urlBase + material.urlPath(&rng) }
                guard wantAccepted else { break }
                try material.listFile(lines, &rng).write(to: URL(fileURLWithPath: sandbox.root + "/lists/fuzz.txt"))
                let probe = Self.listJob(templates: templates, urls: extraURLs)
                if let job = try? Job.parse(text: probe, filePath: sandbox.jobPath), (try? JobRunner.plan(job)) != nil { break }
            }
            // Make the files the local lines name, where the kernel will look for them (inside the sandbox).
            var sources: [String] = []
            for line in lines where !line.contains("://") && !line.utf8.contains(0) {
                let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), trimmed.utf8.count < 4000 else { continue }
                let path = trimmed.utf8.first == UInt8(ascii: "/") ? trimmed : listFolder + "/" + trimmed
                let resolved = String(decoding: BytePath.normalize(path), as: UTF8.self)
                guard BytePath.isInside(resolved, root: sandbox.root + "/photos") || BytePath.isInside(resolved, root: sandbox.root + "/lists")
                        || BytePath.isInside(resolved, root: sandbox.root + "/src") else { continue }
                var isFolder: ObjCBool = false
                if FileManager.default.fileExists(atPath: resolved, isDirectory: &isFolder) { if !isFolder.boolValue { sources.append(resolved) }; continue }
                if mkdir(Paths.directory(of: resolved), 0o755) != 0 && errno != EEXIST {
                    try? FileManager.default.createDirectory(atPath: Paths.directory(of: resolved), withIntermediateDirectories: true)
                }
                if FileManager.default.createFile(atPath: resolved, contents: image) { sources.append(resolved); sourcesMade += 1 }
            }
            try material.listFile(lines, &rng).write(to: URL(fileURLWithPath: listFolder + "/fuzz.txt"))
            let text = Self.listJob(templates: templates, urls: extraURLs)
            try text.write(toFile: sandbox.jobPath, atomically: false, encoding: .utf8)
            let hashes = sources.map { (try? Data(contentsOf: URL(fileURLWithPath: $0))) ?? Data() }
            let before = TreeSnapshot(sandbox.root)
            let outcome = try Self.runBinary(["run", "jobs/job.json"], in: sandbox.root, cpuLimit: 120)
            counts[outcome.status, default: 0] += 1
            if let problem = Self.memoryProblem(outcome, case: index) { problems.append(problem) }
            if outcome.signal != nil || ![0, 1, 2].contains(outcome.status) {
                problems.append("run \(index): exit \(outcome.status) signal \(outcome.signal ?? 0): \(outcome.stderr)")
            }
            for (source, hash) in zip(sources, hashes) where (try? Data(contentsOf: URL(fileURLWithPath: source))) != hash {
                problems.append("run \(index): source \(source.debugDescription) was changed")
            }
            let roots = templates.map { PathMaterial.root(ofTemplate: $0, base: sandbox.root + "/jobs") } + [sandbox.root + "/state"]
            let changed = TreeSnapshot(sandbox.root).changes(since: before)
            let stray = Self.outside(changed, roots: roots, files: []).filter { $0 != sandbox.root + "/lists/fuzz.txt" }
            if !stray.isEmpty {
                problems.append("run \(index): wrote outside the templates' roots: \(stray.prefix(3).map(\.debugDescription)) (templates \(templates.map(\.debugDescription)))")
            }
            Self.remove(changed.filter { !sources.contains($0) })
        }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(3).joined(separator: "\n"))")
        print("path fuzz, runner run: \(runs) runs (seed \(FuzzSettings.seed &+ 4)) over hostile lists and URLs, "
              + "\(sourcesMade) source files made at the names they resolve to; exit codes \(counts.sorted { $0.key < $1.key })")
    }
}
