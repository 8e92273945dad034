import Foundation
import Testing
import TestSupport

@Suite("A run's sweep for temporary files skips output folders unchanged since a sweep found them clean", .serialized)
struct CleanFolderTests {
    /// A run with `--log-format json`: its plan event and its summary event.
    func run(_ workspace: Workspace, _ job: String) throws -> (plan: [String: Any], summary: [String: Any]) {
        let result = try workspace.run([job, "--log-format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let plan = try #require(events.first { $0["event"] as? String == "plan" }, "\(result.stdout)")
        return (plan, try #require(events.last, "\(result.stdout)"))
    }

    /// The plan event's sweep counts: folders read, folders skipped as clean, temporaries removed.
    func swept(_ plan: [String: Any]) -> [Int] {
        ["foldersSwept", "foldersKnownClean", "temporariesRemoved"].map { plan[$0] as? Int ?? -1 }
    }

    @Test("a folder is read again only once changed (a planted temporary is removed); one changed within 2 s, or holding a live temporary, is not trusted; a deleted output is rendered again")
    func skipsCleanFolders() async throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in/a")
        try workspace.copyFixtures(["photos/fig-bowl.jpg"], to: "in/b")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in", "recursive": true}],
             "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg",
                          "chain": [{"op": "thumbnail", "width": 32, "height": 32, "fit": "inside"}], "format": {"type": "jpeg"}}],
             "state": "state.sqlite"}
            """)
        #expect(try run(workspace, job).summary["done"] as? Int == 2)
        try await pastTheRacyWindow()
        // out/b looks modified just now, as if by a run still writing there: never recorded clean.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(3600)], ofItemAtPath: workspace.path("out/b"))
        #expect(swept(try run(workspace, job).plan) == [2, 0, 0])
        #expect(swept(try run(workspace, job).plan) == [1, 1, 0])

        // A killed run's temporary (a PID that cannot exist) changes out/a: read again, and it goes.
        try workspace.write("partial", to: "out/a/.gone.jpg.runner-tmp-999999999")
        #expect(swept(try run(workspace, job).plan) == [2, 0, 1])
        #expect(workspace.files(in: "out/a") == ["friends.jpg"])

        // A deleted output changes its folder too; whatever the sweep knew, the item runs again.
        try FileManager.default.removeItem(atPath: workspace.path("out/a/friends.jpg"))
        let rerun = try run(workspace, job)
        #expect(rerun.summary["done"] as? Int == 1)
        #expect(workspace.files(in: "out/a") == ["friends.jpg"])
        try await pastTheRacyWindow()
        #expect(swept(try run(workspace, job).plan) == [2, 0, 0])
        #expect(swept(try run(workspace, job).plan) == [1, 1, 0])

        // Another machine's young temporary stays, and so its folder is read on every run until it goes.
        try workspace.write("in progress elsewhere", to: "out/a/.more.jpg.runner-tmp-999999999-0a1b2c3d")
        try await pastTheRacyWindow()
        #expect(swept(try run(workspace, job).plan) == [2, 0, 0])
        #expect(swept(try run(workspace, job).plan) == [2, 0, 0])
        #expect(workspace.files(in: "out/a") == [".more.jpg.runner-tmp-999999999-0a1b2c3d", "friends.jpg"])
    }
}
