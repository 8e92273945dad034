import Foundation
import Testing
import TestSupport

@Suite("The command line: commands, job files and exit codes")
struct CommandLineTests {
    @Test("a misspelled command is an unknown command with the nearest one, exit 64; nothing is read or run")
    func unknownCommand() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        let result = try workspace.run(["stauts", job])
        #expect(result.status == 64)
        #expect(result.stderr.contains(#"runner: unknown command "stauts" (did you mean "status"?)"#), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state.sqlite")))
        let far = try workspace.run(["thumbs"])
        #expect(far.status == 64)
        #expect(far.stderr.contains(#"unknown command "thumbs" (known: failed, formats, plan, "#) && far.stderr.contains("status, unblock, validate)"),
                "\(far.stderr)")
    }

    @Test("the first word is a job file when it exists or is written like a path")
    func jobFileFirst() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try FileManager.default.moveItem(atPath: try simpleJob(workspace), toPath: workspace.path("nightly"))
        let run = try workspace.run(["nightly", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("1 done, 0 failed"))
        let missing = try workspace.run(["nightly.json"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("runner: nightly.json: cannot read job file \(workspace.path("nightly.json"))"))
        #expect(try workspace.run(["jobs/nightly"]).status == 2)
    }

    @Test("command-line usage errors exit 64, job-file errors 2", arguments: [
        (["run"], 64),
        (["unblock", "job.json"], 64),
        (["run", "job.json", "--jobs", "0"], 64),
        (["status", "job.json", "--runs", "many"], 64),
        (["validate", "job.json"], 2),
        (["job.json"], 2),
    ] as [([String], Int32)])
    func exitCodes(arguments: [String], status: Int32) throws {
        let workspace = try Workspace()
        try workspace.writeJob(#"{"version": 1, "sources": [{"path": "in"}], "outputs": []}"#)
        let result = try workspace.run(arguments)
        #expect(result.status == status, "\(result.stderr)")
    }
}
