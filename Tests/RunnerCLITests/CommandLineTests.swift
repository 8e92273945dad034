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
        #expect(far.stderr.contains(#"unknown command "thumbs" (known: compare, duplicates, failed, formats, manifest, migrate, plan, "#) && far.stderr.contains("status, unblock, validate)"),
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

    @Test("an output name ending in {ext} is checked per source: a PNG source named .png with type jpeg stops the job before any work")
    func extensionFromSource() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/bird-lamp.png"], to: "in")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "t", "path": "out/{stem}.{ext}", "chain": [], "format": {"type": "jpeg"}}], "state": "state.sqlite"}
            """)
        for command in [["validate", job], [job]] {
            let result = try workspace.run(command)
            #expect(result.status == 2, "\(command): \(result.stdout)")
            #expect(result.stderr.contains("outputs[0].path: \(workspace.path("in/bird-lamp.png")) would be written as "
                + #"\#(workspace.path("out/bird-lamp.png")): the extension ".png" names another format (png) than format.type "jpeg""#),
                "\(result.stderr)")
        }
        #expect(workspace.files(in: "out").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state.sqlite")))
    }

    @Test("every job-file error names the job file: a missing source folder and two items writing one path (found while planning), a missing job file with why")
    func errorsNameTheJobFile() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try workspace.copyFixtures(["photos/friends.jpg"], to: "more")
        try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "photos"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}
            """, name: "missing.json")
        try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}, {"path": "more"}],
             "outputs": [{"name": "t", "path": "out/friends.jpg", "chain": [], "format": {"type": "jpeg"}}]}
            """, name: "collide.json")
        for command in ["validate", "run", "plan"] {
            let missing = try workspace.run([command, "missing.json"])
            #expect(missing.status == 2)
            #expect(missing.stderr.contains("runner: missing.json:1:37: sources[0].path: \(workspace.path("photos")): No such file or directory"),
                    "\(command): \(missing.stderr)")
            let collide = try workspace.run([command, "collide.json"])
            #expect(collide.status == 2, "\(command): \(collide.stdout)")
            #expect(collide.stderr.contains("runner: collide.json:2:36: outputs[0].path: two items would write \(workspace.path("out/friends.jpg"))"),
                    "\(command): \(collide.stderr)")
        }
        let absent = try workspace.run(["validate", "jobs/nightly.json"])
        #expect(absent.status == 2)
        #expect(absent.stderr.contains("runner: jobs/nightly.json: cannot read job file \(workspace.path("jobs/nightly.json")): no such file"),
                "\(absent.stderr)")
        #expect(try workspace.run(["validate", "in"]).stderr.contains("cannot read job file \(workspace.path("in")): it is a folder"))
    }

    @Test("a 10 MB format.type: a short error line, at once (it was a 10 MB line after the nearest-name search ran over it)")
    func hugeValueShortError() throws {
        let workspace = try Workspace()
        try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "\(String(repeating: "x", count: 10_000_000))"}}]}
            """)
        let (result, seconds) = try workspace.runCounting(["validate", "job.json"])
        #expect(result.status == 2)
        #expect(result.stderr.hasSuffix(#"runner: job.json:2:86: outputs[0].format.type: unknown format "\#(String(repeating: "x", count: 59))…" "#
            + "(10000000 characters) (known: auto, avif, gif, jpeg, jxl, png, tiff, webp)\n"), "\(result.stderr.prefix(300))")
        #expect(result.stderr.utf8.count < 300)
        // 24 to 58 s in a debug build before, about 1 s after (CPU time, which a busy machine does not stretch).
        #expect(seconds < 10, "\(seconds) s of CPU")
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
