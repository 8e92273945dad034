import Foundation
import Testing
import TestSupport

/// The job-file fuzzer, in process. `make fuzz` runs 100,000 cases (RUNNER_FUZZ_CASES); the test
/// suite a few thousand. A case that traps the process is named in
/// $TMPDIR/runner-fuzz-job-files-last-case; RUNNER_FUZZ_DUMP=N writes case N's text out instead of
/// running; RUNNER_FUZZ_PROFILE prints every case slower than 20 ms.
@Suite("Fuzzing job files in process", .timeLimit(.minutes(30)))
struct FuzzJobFileTests {
    /// The most memory one case may take over what the process held before it (a case at the
    /// job-file limit takes about 100 MiB): `make fuzz` stays within 2 GB.
    static let largestCaseMemory = 512 << 20

    struct CaseProblem: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads a case as runner does: from its text, or, past a case's largest size (only the cases at
    /// the job-file limit and one byte over it), from the job file, refused unread over the limit.
    static func read(_ text: String, at path: String) throws -> Job {
        let size = text.utf8.count
        guard size > JobFileMutator.largestCase else { return try Job.parse(text: text, filePath: path) }
        guard (Job.largestFile...Job.largestFile + 1).contains(size) else {
            throw CaseProblem(description: "\(size) bytes, over the \(JobFileMutator.largestCase) a case may be")
        }
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        do {
            let job = try Job.load(path: path)
            if size > Job.largestFile { throw CaseProblem(description: "\(size) bytes, over the job-file limit, was accepted") }
            return job
        } catch let error as JobFileError where size > Job.largestFile && !error.message.contains("over the limit of 16 MiB") {
            throw CaseProblem(description: "\(size) bytes, refused for another reason: \(error.message.prefix(300))")
        }
    }

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

    /// Reads a case and, when its sources lie in the sandbox, does what `runner validate` does next:
    /// discovers the sources and names every output. Whether it planned, and how long each took.
    static func validate(_ text: String, in sandbox: FuzzSandbox) throws -> (planned: Bool, reading: Duration, planning: Duration) {
        let clock = ContinuousClock(), start = clock.now
        let job = try read(text, at: sandbox.jobPath)
        let reading = clock.now - start
        _ = job.outputs.map(\.recipe)
        guard sourcesInside(job, sandbox.root) else { return (false, reading, .zero) }
        _ = try JobRunner.validate(job)
        return (true, reading, clock.now - start - reading)
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
        var accepted = 0, rejected = 0, planned = 0, atLimit = 0, slowest = Duration.zero, largestMemory = (bytes: 0, index: 0)
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
            if text.utf8.count > JobFileMutator.largestCase { atLimit += 1 }
            let (start, cpu) = (clock.now, threadCPUSeconds())
            let memory = ResidentMemory.taken {
                do {
                    let outcome = try Self.validate(text, in: sandbox)
                    (parsing, planning) = (parsing + outcome.reading, planning + outcome.planning)
                    (accepted, planned) = (accepted + 1, planned + (outcome.planned ? 1 : 0))
                } catch is JobFileError {
                    rejected += 1
                } catch {
                    problems.append("case \(index): \(type(of: error)): \(String(describing: error).prefix(300))")
                }
            }
            if memory.bytes > largestMemory.bytes { largestMemory = (memory.bytes, index) }
            if memory.bytes > Self.largestCaseMemory {
                problems.append("case \(index) took \(memory.bytes >> 20) MiB: peak RSS \(memory.before >> 20) MiB before it, \(memory.peak >> 20) MiB during it")
            }
            let took = clock.now - start
            if ProcessInfo.processInfo.environment["RUNNER_FUZZ_PROFILE"] != nil, took > .milliseconds(20) {
                print("slow case \(index): \(took), \(text.utf8.count) bytes: \(text.prefix(100))")
            }
            slowest = max(slowest, took)
            // A hang or a quadratic blow-up, not a speed target: a 16 MiB case takes 1-3 s of CPU.
            if threadCPUSeconds() - cpu > 20 { problems.append("case \(index) took \(took), \(threadCPUSeconds() - cpu) s of CPU") }
        }
        guard dump == nil else { return }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(5))")
        let written = TreeSnapshot(sandbox.root).changes(since: before).filter { $0 != sandbox.jobPath }
        #expect(written.isEmpty, "reading job files wrote \(written.prefix(5))")
        print("job-file fuzz, in process: \(cases) cases (seed \(FuzzSettings.seed)): \(accepted) accepted "
              + "(\(planned) of them planned as runner validate does), \(rejected) rejected with JobFileError "
              + "(\(atLimit) at the job-file limit or one byte over it), slowest \(slowest), \(clock.now - began) in all (generating \(generating), parsing accepted "
              + "\(parsing), planning \(planning)); the most memory a case took \(largestMemory.bytes >> 20) MiB (case \(largestMemory.index))")
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
