import Foundation
import Testing
import TestSupport
import Support

/// Debian's Python, where `python3-prometheus-client` (installed by `make deps`) lives.
let systemPython = "/usr/bin/python3"

/// Runs a Python program with the system interpreter.
func python(_ program: String, _ arguments: [String]) throws -> CommandResult {
    try RunningCommand(systemPython, arguments: ["-c", program] + arguments, directory: NSTemporaryDirectory(),
                       environment: [:]).wait()
}

@Suite("Operating it every night", .serialized)
struct OperatorToolsTests {
    @Test("--max-duration stops handing out work: in-flight items finish, exit 124, the next run finishes the rest")
    func timeBudget() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 10)
        // The budget runs out at once and is held there until both workers hold their first source.
        let pauses = try Pauses("worker.task", "run.budget", in: workspace)
        let run = try workspace.start([job, "--max-duration", "0s", "--log-format", "json"], environment: pauses.environment)
        let budget = try #require(pauses.wait(for: "run.budget", of: run).first, "\(run.stdoutSoFar) \(run.stderrSoFar)")
        #expect(pauses.wait(for: "worker.task", count: 2, of: run).count == 2)
        pauses.release(budget)
        #expect(run.waitUntil { run.stdoutSoFar.contains("time budget reached") })
        try pauses.releaseAll()
        let stopped = run.wait()
        #expect(stopped.status == 124, "\(stopped.stderr)")
        let summary = try #require(summaryEvent(stopped.stdout))
        #expect(summary["stoppedByBudget"] as? Bool == true)
        let done = try #require(summary["done"] as? Int)
        let notStarted = try #require(summary["notStarted"] as? Int)
        #expect(done > 0 && notStarted > 0 && done + notStarted == 20, "\(summary)")
        #expect(stopped.stdout.contains("time budget reached"))
        // Nothing half-written, and everything the run reported done is on disk.
        #expect(!workspace.files(in: "out/small").contains { $0.contains(".runner-tmp-") })
        #expect(!workspace.files(in: "out/soft").contains { $0.contains(".runner-tmp-") })
        let status = try workspace.run(["status", job])
        #expect(status.stdout.contains("stopped-by-budget exit 124"), "\(status.stdout)")

        let resumed = try workspace.run([job, "--log-format", "json"])
        #expect(resumed.status == 0)
        let rest = try #require(summaryEvent(resumed.stdout))
        #expect(rest["done"] as? Int == notStarted, "the next run does only what was left")
        try verifyOutputs(workspace, expected: 10)
    }

    @Test("a budget that ends with nothing left is a success; a stopped --force run keeps the failures on record")
    func budgetEdges() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 10)
        try FileManager.default.copyItem(atPath: Fixtures.path("broken/truncated.jpg"), toPath: workspace.path("in/truncated.jpg"))
        #expect(try workspace.run([job]).status == 1)
        let nothingLeft = try workspace.run([job, "--max-duration", "0s"])
        #expect(nothingLeft.status == 0, "nothing was left for the next run: \(nothingLeft.stdout)")

        // --force stopped early: the items it never reached keep their records (done, failed and why).
        let forced = try workspace.run([job, "--force", "--max-duration", "0s", "-j", "1"])
        #expect(forced.status == 124, "\(forced.stdout)")
        #expect(try workspace.run(["failed", job]).stdout.contains("truncated.jpg -> small: decode"))
        let after = try workspace.run([job, "--log-format", "json"])
        #expect(after.status == 0, "the failure is carried over, not new: \(after.stdout)")
        #expect(try #require(summaryEvent(after.stdout))["knownFailures"] as? Int == 2)
    }

    @Test("--deadline takes the next time the clock reads HH:MM; malformed budgets are usage errors")
    func deadlineParsing() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let evening = try #require(calendar.date(from: DateComponents(year: 2026, month: 11, day: 23, hour: 23)))
        let next = try #require(Durations.nextOccurrence(of: "06:30", after: evening, calendar: calendar))
        #expect(calendar.dateComponents([.day, .hour, .minute], from: next) == DateComponents(day: 24, hour: 6, minute: 30))
        let sameDay = try #require(Durations.nextOccurrence(of: "23:30", after: evening, calendar: calendar))
        #expect(sameDay.timeIntervalSince(evening) == 1800)
        for bad in ["6:30", "24:00", "06:60", "noon", "06:30:00"] { #expect(Durations.nextOccurrence(of: bad) == nil, "\(bad)") }

        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        let badDeadline = try workspace.run([job, "--deadline", "25:00"])
        #expect(badDeadline.status == 64)
        #expect(badDeadline.stderr.contains("--deadline must be a time of day as HH:MM"))
        #expect(try workspace.run([job, "--max-duration", "soon"]).status == 64)
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state.sqlite")), "nothing ran")
    }

    @Test("--metrics writes Prometheus' text format that a real parser reads: items, failures, the run, last success")
    func prometheusMetrics() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "broken/truncated.jpg"], to: "in")
        let job = try simpleJob(workspace)
        let metrics = workspace.path("metrics/runner.prom")
        try FileManager.default.createDirectory(atPath: workspace.path("metrics"), withIntermediateDirectories: true)
        #expect(try workspace.run([job, "--metrics", metrics]).status == 1)
        let succeeding = Date().timeIntervalSince1970
        #expect(try workspace.run([job, "--metrics", metrics]).status == 0)
        let succeeded = Date().timeIntervalSince1970
        #expect(workspace.files(in: "metrics") == ["runner.prom"], "written whole, renamed into place")

        // prometheus_client's own parser: every sample as NAME|labels|value.
        let parsed = try python("""
            import sys
            from prometheus_client.parser import text_string_to_metric_families
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for s in family.samples:
                    labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()) if k != "job")
                    print(f"{s.name}|{labels}|{s.value}|{s.labels.get('job')}")
            """, [metrics])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let samples = Dictionary(uniqueKeysWithValues: parsed.stdout.split(separator: "\n").map { line in
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            return ("\(fields[0])|\(fields[1])", (Double(fields[2]) ?? -1, fields[3]))
        })
        #expect(samples["runner_items|state=done"]?.0 == 2)
        #expect(samples["runner_items|state=failed"]?.0 == 1)
        #expect(samples["runner_items|state=running"]?.0 == 0)
        #expect(samples["runner_failures|kind=decode"]?.0 == 1)
        #expect(samples["runner_run_items|result=up_to_date"]?.0 == 2)
        #expect(samples["runner_run_items|result=known_failure"]?.0 == 1)
        #expect(samples["runner_run_exit_code|"]?.0 == 0)
        #expect(samples["runner_info|libvips=\(ImageProbe.libvipsVersion),version=\(RunnerVersion.string)"]?.0 == 1, "\(samples.keys.sorted())")
        #expect(samples["runner_items|state=done"]?.1 == "simple")
        let lastSuccess = try #require(samples["runner_last_success_timestamp_seconds|"]?.0)
        #expect(lastSuccess >= succeeding && lastSuccess <= succeeded, "the second run's end")
    }
}

