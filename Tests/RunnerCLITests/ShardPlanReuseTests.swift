import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// Waits out runner's racy window: a file or folder's identity is trusted only once it was last
/// changed 2 s before it is read (FileIdentity.racyWindow). Asleep without holding a thread.
func pastTheRacyWindow() async throws {
    try await Task.sleep(for: .seconds(2.2))
}

@Suite("A shard reuses its last plan while nothing that decides its sources changed")
struct ShardPlanReuseTests {
    /// Hard links of fixture photos at `names` (relative to the workspace), a list naming `lines`,
    /// and a job over the list; the list is then left alone for longer than runner's racy window
    /// (2 s), so the first run may record its plan.
    func listJob(_ workspace: Workspace, photos names: [String], lines: [String], template: String) async throws -> String {
        let photos = ["photos/friends.jpg", "photos/fig-bowl.jpg", "extra/ladybird.jpg"]
        for (index, name) in names.enumerated() {
            try FileManager.default.createDirectory(atPath: (workspace.path(name) as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try FileManager.default.linkItem(atPath: Fixtures.path(photos[index % 3]), toPath: workspace.path(name))
        }
        try workspace.write(lines.joined(separator: "\n") + "\n", to: "list.txt")
        let job = try writeJob(workspace, template: template)
        try await pastTheRacyWindow()
        return job
    }

    @discardableResult
    func writeJob(_ workspace: Workspace, template: String) throws -> String {
        try workspace.writeJob("""
        {"version": 1, "name": "listed", "sources": [{"list": "list.txt"}],
         "outputs": [{"name": "t", "path": "\(template)",
                      "chain": [{"op": "thumbnail", "width": 32, "height": 32, "fit": "inside"}], "format": {"type": "jpeg"}}],
         "state": "state/job.sqlite"}
        """)
    }

    /// `runner plan --json` of shard `index` of 2.
    func plan(_ workspace: Workspace, _ job: String, shard index: Int) throws -> [String: Any] {
        let result = try workspace.run(["plan", job, "--shard", "\(index)/2", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
    }

    /// Each shard's items as `runner plan --list` names them, in plan order, without their status.
    func listing(_ workspace: Workspace, _ job: String) throws -> [[String]] {
        try (0..<2).map { index in
            try workspace.run(["plan", job, "--shard", "\(index)/2", "--list"]).stdout.split(separator: "\n")
                .filter { $0.contains("\t") }.map { String($0.split(separator: "\t", maxSplits: 1)[1]) }
        }
    }

    /// Runs both shards; returns how many items they did.
    func runShards(_ workspace: Workspace, _ job: String, expecting status: Int32 = 0) throws -> (done: Int, stderr: [String]) {
        var done = 0
        var stderr: [String] = []
        for index in 0..<2 {
            let result = try workspace.run([job, "--shard", "\(index)/2", "--log-format", "json"])
            #expect(result.status == status, "shard \(index)/2: \(result.stderr)")
            done += summaryEvent(result.stdout)?["done"] as? Int ?? 0
            stderr.append(result.stderr)
        }
        return (done, stderr)
    }

    @Test("an unchanged list is not read again; an added line, or a same-size rewrite with its old mtime, is found")
    func listChanges() async throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        let photos = (0..<8).map { "in/\($0).jpg" }
        let job = try await listJob(workspace, photos: photos, lines: Array(photos[0..<6]) + [server.url("/img/remote.jpg")],
                              template: "out/{dir}/{stem}.jpg")
        let fresh = try listing(workspace, job)
        #expect(try runShards(workspace, job).done == 7)
        for index in 0..<2 { #expect(try plan(workspace, job, shard: index)["reusedSources"] as? Bool == true, "shard \(index)/2") }
        // Rebuilt from the record: the same sources, keys and output paths in the same order as found in the list.
        #expect(try listing(workspace, job) == fresh)
        let rerun = try workspace.run([job, "--shard", "0/2"])
        #expect(rerun.status == 0 && (rerun.stdout + rerun.stderr).contains("sources as the last plan found them"), "\(rerun.stdout)\(rerun.stderr)")

        let list = try FileHandle(forWritingTo: URL(fileURLWithPath: workspace.path("list.txt")))
        try list.seekToEnd()
        try list.write(contentsOf: Data("in/6.jpg\n".utf8))
        try list.close()
        #expect(try runShards(workspace, job).done == 1, "the added line is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/in/6.jpg")))

        // Recorded again once the list has settled; then one line rewritten in place, same size, with the
        // old modification time put back: only the change time tells.
        try await pastTheRacyWindow()
        #expect(try runShards(workspace, job).done == 0)
        #expect(try plan(workspace, job, shard: 0)["reusedSources"] as? Bool == true)
        var before = stat()
        #expect(stat(workspace.path("list.txt"), &before) == 0)
        let text = try String(contentsOfFile: workspace.path("list.txt"), encoding: .utf8).replacingOccurrences(of: "in/1.jpg", with: "in/7.jpg")
        let file = try #require(fopen(workspace.path("list.txt"), "r+"))
        #expect(fputs(text, file) >= 0 && fclose(file) == 0)
        let times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, workspace.path("list.txt"), times, 0) == 0)
        var after = stat()
        #expect(stat(workspace.path("list.txt"), &after) == 0)
        #expect(after.st_ino == before.st_ino && after.st_size == before.st_size
                && after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(try runShards(workspace, job).done == 1, "the rewritten line is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/in/7.jpg")))
    }

    @Test("a line that makes two sources write one output fails its item in its shard, naming the other; the plan is not kept")
    func collidingLine() async throws {
        let workspace = try Workspace()
        let job = try await listJob(workspace, photos: ["a/x.jpg", "b/x.jpg", "c/y.jpg", "c/z.jpg", "c/w.jpg"],
                              lines: ["a/x.jpg", "c/y.jpg", "c/z.jpg", "c/w.jpg"], template: "out/{stem}.jpg")
        #expect(try runShards(workspace, job).done == 4)
        for index in 0..<2 { #expect(try plan(workspace, job, shard: index)["reusedSources"] as? Bool == true, "shard \(index)/2") }
        let list = try FileHandle(forWritingTo: URL(fileURLWithPath: workspace.path("list.txt")))
        try list.seekToEnd()
        try list.write(contentsOf: Data("b/x.jpg\n".utf8))
        try list.close()
        // a/x.jpg's output is up to date and stays; the new line's item fails, in whichever shard has it.
        let failed = (0..<2).map { index -> (Int32, Int, String) in
            let result = try? workspace.run([job, "--shard", "\(index)/2", "--log-format", "json"])
            return (result?.status ?? -1, summaryEvent(result?.stdout ?? "")?["failed"] as? Int ?? 0, (result?.stdout ?? "") + (result?.stderr ?? ""))
        }
        #expect(failed.map(\.1).reduce(0, +) == 1 && failed.allSatisfy { $0.0 == ($0.1 > 0 ? 1 : 0) }, "\(failed)")
        #expect(failed.contains { $0.2.contains("\"message\":\"\(workspace.path("a/x.jpg")) would write \(workspace.path("out/x.jpg")) too") }, "\(failed)")
        for index in 0..<2 { #expect(try plan(workspace, job, shard: index)["reusedSources"] as? Bool == false, "shard \(index)/2") }
    }

    @Test("a changed output template is checked against the whole job again: the items it makes collide fail, and run once it is back")
    func changedTemplate() async throws {
        let workspace = try Workspace()
        let job = try await listJob(workspace, photos: ["a/x.jpg", "b/x.jpg", "c/y.jpg"], lines: ["a/x.jpg", "b/x.jpg", "c/y.jpg"],
                              template: "out/{dir}/{stem}.jpg")
        #expect(try runShards(workspace, job).done == 3)
        for index in 0..<2 { #expect(try plan(workspace, job, shard: index)["reusedSources"] as? Bool == true, "shard \(index)/2") }
        try writeJob(workspace, template: "out/{stem}.jpg")
        let results = try (0..<2).map { try workspace.run([job, "--shard", "\($0)/2", "--log-format", "json"]) }
        #expect(results.map { summaryEvent($0.stdout)?["failed"] as? Int ?? 0 }.reduce(0, +) == 2, "\(results.map(\.stdout))")
        #expect(results.map { summaryEvent($0.stdout)?["done"] as? Int ?? 0 }.reduce(0, +) == 1, "\(results.map(\.stdout))")
        #expect(results.allSatisfy { $0.status != 2 }, "what the folders hold is no job-file error: \(results.map(\.stderr))")
        // Back as it was: the two items run again; the third's output moves back.
        try writeJob(workspace, template: "out/{dir}/{stem}.jpg")
        #expect(try runShards(workspace, job).done == 3)
    }
}
