import Foundation
import Testing
import TestSupport

/// Issue 32, point 8: `{hash}` in an output's name, the first 8 hex digits of FNV-1a 64 of its bytes
/// (the manifest's `hash`), so that a site can serve its images as immutable.
extension SiteManifestTests {
    private func hashJob(_ workspace: Workspace, path: String = "site/img/{stem}.{hash}.webp", width: Int = 200, keep: String = "7d") throws -> String {
        try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "thumb", "path": "\(path)", "chain": [{"op": "thumbnail", "width": \(width), "fit": "inside"}], "format": {"type": "webp"}}],
             "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite", "concurrency": {"process": 1}, "keepReplaced": "\(keep)"}
            """)
    }

    /// Each source's output as the manifest names it: stem -> (path relative to the manifest, hash).
    private func named(_ workspace: Workspace) throws -> [String: (path: String, hash: String)] {
        var named: [String: (path: String, hash: String)] = [:]
        for source in sources(try document(workspace, "site/images.json")) {
            let stem = try #require((source["key"] as? String).map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent })
            let output = try #require((source["outputs"] as? [[String: Any]])?.first)
            named[stem] = (try #require(output["path"] as? String), try #require(output["hash"] as? String))
        }
        return named
    }

    @Test("{hash}: each file named by its bytes' hash, as the manifest says; up to date on a rerun; a changed source's old file kept for keepReplaced after the manifest that drops it, then removed; prune sees no orphan")
    func namesByBytes() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        var job = try hashJob(workspace)
        var run = try workspace.run([job])
        #expect(run.status == 0 && run.stdout.contains("2 done"), "\(run.stdout)\(run.stderr)")
        #expect(try check(workspace, ["site/images.json"]) == "ok", "every named file is there with its bytes and hash")
        var before = try named(workspace)
        for stem in ["friends", "fig-bowl"] {
            let entry = try #require(before[stem])
            #expect(entry.path == "img/\(stem).\(entry.hash).webp", "\(entry)")
        }
        #expect(workspace.files(in: "site/img") == before.values.map { String($0.path.dropFirst(4)) }.sorted())

        run = try workspace.run([job])
        #expect(run.stdout.contains("0 done, 0 failed, 2 up to date"), "\(run.stdout)")
        let listed = try workspace.run(["prune", job])
        #expect(listed.status == 0 && listed.stdout.contains("0 orphaned items"), "a {hash} file is no orphan: \(listed.stdout)")

        // Other bytes (a wider thumbnail): new names; the old files stay for a site deployed from
        // the previous manifest, listed by prune (not due), and prune --delete keeps them.
        job = try hashJob(workspace, width: 240)
        run = try workspace.run([job])
        #expect(run.status == 0 && run.stdout.contains("2 done"), "\(run.stdout)\(run.stderr)")
        let after = try named(workspace)
        #expect(after["fig-bowl"]?.hash != before["fig-bowl"]?.hash)
        let old = before.values.map { String($0.path.dropFirst(4)) }, new = after.values.map { String($0.path.dropFirst(4)) }
        #expect(workspace.files(in: "site/img") == (old + new).sorted(), "the old files kept")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        for command in [["prune", job], ["prune", job, "--delete"]] {
            let listed = try workspace.run(command)
            #expect(listed.stdout.contains("2 replaced files kept (0 past keepReplaced)")
                    && old.allSatisfy { listed.stdout.contains(workspace.path("site/img/" + $0) + "\treplaced; kept until 20") },
                    "\(listed.stdout)")
        }
        #expect(workspace.files(in: "site/img") == (old + new).sorted())
        // With no grace, a run removes them once its manifest is out.
        job = try hashJob(workspace, width: 240, keep: "0s")
        run = try workspace.run([job])
        #expect(run.stdout.contains("0 done, 0 failed, 2 up to date") && workspace.files(in: "site/img") == new.sorted(), "\(run.stdout)")
        before = after

        // Killed with a file staged, not yet published: the next run leaves one file a source, nothing partial.
        job = try hashJob(workspace, width: 280, keep: "0s")
        let pauses = try Pauses("worker.staged", in: workspace)
        let killed = try workspace.start([job], environment: pauses.environment)
        #expect(pauses.wait(for: "worker.staged", of: killed).count == 1)
        killed.signal(SIGKILL)
        _ = killed.wait()
        run = try workspace.run([job])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let resumed = try named(workspace)
        #expect(workspace.files(in: "site/img") == resumed.values.map { String($0.path.dropFirst(4)) }.sorted(), "one file a source")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
    }

    @Test("{hash}: an output never made (a decode failure, a skipped width) names no file, never a literal {hash}; the manifest keeps to its schema")
    func unmadeOutputsNameNoFile() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "broken/truncated.jpg"], to: "in")
        // friends.jpg is 533 px wide: 4000 makes it at its own width, so 8000 is skipped.
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "pic", "path": "site/img/{stem}-{width}.{hash}.{format}", "widths": [4000, 8000], "formats": ["webp"], "chain": []}],
             "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
            """)
        let run = try workspace.run([job])
        #expect(run.status == 1 && run.stdout.contains("1 done, 1 failed"), "\(run.stdout)\(run.stderr)")
        let outputs = sources(try document(workspace, "site/images.json")).flatMap { $0["outputs"] as? [[String: Any]] ?? [] }
        let states = outputs.map { "\($0["name"] ?? "")=\($0["state"] ?? ""):\($0["path"] ?? "-")" }.sorted()
        #expect(outputs.count == 4 && outputs.filter { $0["path"] != nil }.count == 1, "\(states)")
        #expect(!states.contains { $0.contains("{") }, "no literal token: \(states)")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
    }

    @Test("{hash} must end the file's name but for text, and be given once: errors name the key")
    func hashPlacement() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        for path in ["site/{hash}/{stem}.webp", "site/{hash}-{stem}.webp", "site/{stem}-{hash}-{hash}.webp"] {
            let result = try workspace.run(["validate", try hashJob(workspace, path: path)])
            let message = path.contains("{hash}-{hash}") ? "outputs[0].path: {hash} may be given once"
                : "outputs[0].path: {hash} must be in the file's name with only text after it"
            #expect(result.status == 2 && result.stderr.contains(message), "\(path): \(result.stderr)")
        }
        // Two sources cannot share a name, whatever their bytes: {hash} alone does not tell them apart.
        try workspace.copyFixtures(["photos/fig-bowl.jpg"], to: "in")
        let result = try workspace.run(["validate", try hashJob(workspace, path: "site/{hash}.webp")])
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
    }
}
