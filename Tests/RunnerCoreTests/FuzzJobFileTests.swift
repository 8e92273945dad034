import Foundation
import Testing
import TestSupport

/// The job-file fuzzer, in process. `make fuzz` runs 100,000 cases (RUNNER_FUZZ_CASES); the test
/// suite a few thousand. A case that traps the process is named in
/// $TMPDIR/runner-fuzz-job-files-last-case; RUNNER_FUZZ_DUMP=N writes case N's text out instead of
/// running; RUNNER_FUZZ_PROFILE prints every case slower than 20 ms.
@Suite("Fuzzing job files in process", .timeLimit(.minutes(30)))
struct FuzzJobFileTests {
    /// True when every file source of `job` lies inside `folder`, so planning it reads only the sandbox.
    static func sourcesInside(_ job: Job, _ folder: String) -> Bool {
        job.sources.allSatisfy { source in
            switch source {
            case .path(let path, _, _, _), .glob(let path), .list(let path): path.hasPrefix(folder + "/")
            case .url: true
            // Listing would send requests to the store (AWS's, by default): not planned.
            case .bucket: false
            }
        }
    }

    @Test("mutated job files: Job.parse returns a job or throws JobFileError, never traps or hangs, and nothing is written")
    func mutatedJobFiles() throws {
        let cases = FuzzSettings.count("CASES", default: 3000)
        let sandbox = try FuzzSandbox()
        let mutator = JobFileMutator(seeds: try FuzzSandbox.seedJobs(), ops: try FuzzSandbox.pool("ops"),
                                     formats: try FuzzSandbox.pool("formats"), sandbox: sandbox.root)
        let before = TreeSnapshot(sandbox.root)
        var rng = FuzzRandom(seed: FuzzSettings.seed)
        let dump = ProcessInfo.processInfo.environment["RUNNER_FUZZ_DUMP"].flatMap { Int($0) }
        let progress = FuzzProgress("job-files")
        var accepted = 0, rejected = 0, planned = 0, slowest = Duration.zero
        var generating = Duration.zero, parsing = Duration.zero, planning = Duration.zero
        var problems: [String] = []
        let clock = ContinuousClock()
        let began = clock.now
        for index in 0..<cases {
            let generated = clock.now
            let text = mutator.makeCase(&rng)
            generating += clock.now - generated
            if let dump {
                guard index == dump else { continue }
                let file = NSTemporaryDirectory() + "runner-fuzz-case-\(index).json"
                try text.write(toFile: file, atomically: true, encoding: .utf8)
                print("fuzz case \(index) (seed \(FuzzSettings.seed)) written to \(file)")
                return
            }
            progress.mark(index)
            let start = clock.now
            let cpu = threadCPUSeconds()
            do {
                let job = try Job.parse(text: text, filePath: sandbox.jobPath)
                parsing += clock.now - start
                _ = job.outputs.map(\.recipe)
                // What `runner validate` does next: discover the sources and name every output.
                if Self.sourcesInside(job, sandbox.root) {
                    let planStart = clock.now
                    defer { planning += clock.now - planStart }
                    _ = try JobRunner.validate(job)
                    planned += 1
                }
                accepted += 1
            } catch is JobFileError {
                rejected += 1
            } catch {
                problems.append("case \(index): \(type(of: error)): \(String(describing: error).prefix(300))")
            }
            let took = clock.now - start
            if ProcessInfo.processInfo.environment["RUNNER_FUZZ_PROFILE"] != nil, took > .milliseconds(20) {
                print("slow case \(index): \(took), \(text.utf8.count) bytes: \(text.prefix(100))")
            }
            slowest = max(slowest, took)
            // A hang or a quadratic blow-up, not a speed target: a 10 MB case takes 1-3 s of CPU.
            if threadCPUSeconds() - cpu > 20 { problems.append("case \(index) took \(took), \(threadCPUSeconds() - cpu) s of CPU") }
        }
        guard dump == nil else { return }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(5))")
        let written = TreeSnapshot(sandbox.root).changes(since: before)
        #expect(written.isEmpty, "reading job files wrote \(written.prefix(5))")
        print("job-file fuzz, in process: \(cases) cases (seed \(FuzzSettings.seed)): \(accepted) accepted "
              + "(\(planned) of them planned as runner validate does), \(rejected) rejected with JobFileError, "
              + "slowest \(slowest), \(clock.now - began) in all (generating \(generating), parsing accepted "
              + "\(parsing), planning \(planning))")
    }
}

@Suite("Fuzzing output paths, list files and URLs in process", .timeLimit(.minutes(30)))
struct FuzzPathTests {
    @Test("hostile templates, list lines and URLs: every planned output lies inside its template's root, byte for byte")
    func hostilePaths() throws {
        let cases = FuzzSettings.count("PATH_CASES", default: 2000)
        let sandbox = try FuzzSandbox()
        let material = PathMaterial(sandbox: sandbox.root)
        var rng = FuzzRandom(seed: FuzzSettings.seed &+ 1)
        let progress = FuzzProgress("paths")
        let listPath = sandbox.root + "/lists/fuzz.txt"
        var planned = 0, refused = 0, checked = 0
        var problems: [String] = []
        for index in 0..<cases {
            progress.mark(index)
            let lines = (0..<(1 + rng.below(8))).map { _ in material.line(&rng) }
            try material.listFile(lines, &rng).write(to: URL(fileURLWithPath: listPath))
            var sources: [FuzzJSON] = [.object([("list", .string("../lists/fuzz.txt"))])]
            for _ in 0..<rng.below(3) { sources.append(.object([("url", .string(material.urlBase + material.urlPath(&rng)))])) }
            let templates = (0..<(1 + rng.below(2))).map { _ in material.template(&rng) }
            let outputs = templates.enumerated().map { index, template in
                FuzzJSON.object([("name", .string("o\(index)")), ("path", .string(template)), ("chain", .array([])),
                                 ("format", .object([("type", .string("png"))]))])
            }
            let text = FuzzJSON.object([("version", .number("1")), ("sources", .array(sources)), ("outputs", .array(outputs))]).text
            do {
                let job = try Job.parse(text: text, filePath: sandbox.jobPath)
                let roots = templates.map { PathMaterial.root(ofTemplate: $0, base: sandbox.root + "/jobs") }
                try JobRunner.plan(job) { source in
                    for item in source.items {
                        checked += 1
                        let temporary = AtomicFile.temporaryPath(for: item.outputPath, owner: 1)
                        if let problem = PathMaterial.problem(outputPath: item.outputPath, root: roots[item.outputIndex],
                                                              temporary: temporary) {
                            problems.append("case \(index): \(item.key.debugDescription) -> \(item.outputPath.debugDescription) \(problem) (template \(templates[item.outputIndex].debugDescription))")
                        }
                    }
                }
                planned += 1
            } catch is JobFileError {
                refused += 1
            } catch {
                problems.append("case \(index): \(type(of: error)): \(error)")
            }
        }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(4).joined(separator: "\n"))")
        print("path fuzz, in process: \(cases) jobs (seed \(FuzzSettings.seed &+ 1)): \(planned) planned with \(checked) outputs checked, "
              + "\(refused) refused with JobFileError; \(problems.count) problems")
    }
}
