import Foundation
import Testing
import TestSupport

@Suite("Duplicates")
struct DuplicatesTests {
    /// Five photographs, a resized and recompressed copy of one and a byte copy of another, run as
    /// two shards (so groups are found across shards' databases).
    private func shardedRun(_ workspace: Workspace, derive: String = #"["dhash", "dominant"]"#) throws -> String {
        try workspace.copyFixtures(["photos/aitzgorri.jpg", "photos/friends.jpg", "photos/picos-de-europa.jpg", "photos/fig-bowl.jpg",
                                    "photos/nested/sunset.jpg"], to: "in")
        try VipsCLI.run("vips", ["thumbnail", Fixtures.path("photos/aitzgorri.jpg"), workspace.path("in/aitzgorri-small.jpg[Q=60]"), "400"])
        try FileManager.default.copyItem(atPath: workspace.path("in/friends.jpg"), toPath: workspace.path("in/friends-copy.jpg"))
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "w", "path": "out/{stem}.webp", "chain": [{"op": "thumbnail", "width": 320, "fit": "inside"}],
                          "format": {"type": "webp"}}],
             "derive": \(derive), "state": "state.sqlite"}
            """)
        for shard in ["0/2", "1/2"] {
            let result = try workspace.run([job, "--shard", shard])
            #expect(result.status == 0, "\(result.stderr)")
        }
        return job
    }

    @Test("groups a resized, recompressed copy with its original and a byte copy as exact; unrelated photos stay apart")
    func groups() throws {
        let workspace = try Workspace()
        let job = try shardedRun(workspace)
        let result = try workspace.run(["duplicates", job, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(Set(json.keys) == ["job", "hasRun", "distance", "sources", "exact", "near"], "\(json.keys)")
        #expect(json["distance"] as? Int == 5 && json["sources"] as? Int == 7)
        func names(_ kind: String) -> [[String]] {
            ((json[kind] as? [[String: Any]]) ?? []).map { group in
                ((group["sources"] as? [[String: Any]]) ?? []).map { Paths.lastComponent($0["location"] as? String ?? "") }
            }
        }
        #expect(names("exact") == [["friends-copy.jpg", "friends.jpg"]])
        #expect(names("near") == [["aitzgorri-small.jpg", "aitzgorri.jpg"]])
        let member = try #require(((json["near"] as? [[String: Any]])?.first?["sources"] as? [[String: Any]])?.first)
        #expect(Set(member.keys) == ["key", "location", "bytes", "width", "height", "dhash", "contentHash"], "\(member)")
        #expect(member["width"] as? Int == 400 && (member["bytes"] as? Int ?? 0) > 1000 && (member["dhash"] as? String)?.count == 16)

        let text = try workspace.run(["duplicates", job])
        #expect(text.status == 0 && text.stdout.contains("exact 1: 2 sources, the same bytes")
                && text.stdout.contains("near 1: 2 sources"), "\(text.stdout)")
        // At a distance of 0 the resized copy is no longer a near duplicate (it differs in a few bits).
        let strict = try workspace.run(["duplicates", job, "--distance", "0", "--json"])
        #expect(strict.stdout.contains("\"near\" : [\n\n  ]") || strict.stdout.contains("\"near\" : [ ]") || strict.stdout.contains("\"near\" : []"),
                "\(strict.stdout)")
    }

    @Test("a job that derives no dHash is told so, naming derive")
    func withoutDHash() throws {
        let workspace = try Workspace()
        let job = try shardedRun(workspace, derive: #"["dominant"]"#)
        let result = try workspace.run(["duplicates", job])
        #expect(result.status == 2 && result.stderr.contains("derive: lists no \"dhash\""), "\(result.stderr)")
    }

    @Test("the HTML report shows the duplicate groups side by side and each output's dominant colour")
    func report() throws {
        let workspace = try Workspace()
        let job = try shardedRun(workspace)
        let result = try workspace.run(["report", job])
        #expect(result.status == 0, "\(result.stderr)")
        let html = try String(contentsOfFile: workspace.path("state-report.html"), encoding: .utf8)
        #expect(html.contains("<section id=\"duplicates\">"))
        let groups = html.components(separatedBy: "<div class=\"dupes\"").dropFirst()
        #expect(groups.count == 2, "\(groups.count)")
        #expect(groups.allSatisfy { $0.components(separatedBy: "<img src=\"state-report-previews/").count - 1 >= 2 })
        let dominant = html.components(separatedBy: "data-dominant=\"#").count - 1
        #expect(dominant == 7 + 4, "\(dominant) tiles with a dominant colour: the sheet's 7 and the two groups' 4")
    }

    @Test("prune lists the recorded source of a file gone from the job and, with --delete, drops it: duplicates and the manifest no longer carry it, the others keep theirs")
    func pruneGoneSource() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        try FileManager.default.copyItem(atPath: workspace.path("in/friends.jpg"), toPath: workspace.path("in/friends-copy.jpg"))
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "w", "path": "out/{stem}.webp", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}],
                          "format": {"type": "webp"}}],
             "derive": ["dhash", "thumbhash"], "manifest": {"path": "site/images.json"}, "state": "state.sqlite"}
            """)
        #expect(try workspace.run([job]).status == 0)
        func duplicates() throws -> [String: Any] {
            let result = try workspace.run(["duplicates", job, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        }
        #expect(try duplicates()["sources"] as? Int == 3 && (try duplicates()["exact"] as? [Any])?.count == 1)

        let gone = workspace.path("in/friends-copy.jpg")
        try FileManager.default.removeItem(atPath: gone)
        let listing = try workspace.run(["prune", job])
        #expect(listing.status == 0, "\(listing.stderr)")
        #expect(listing.stdout.split(separator: "\n").contains("drop\t\(gone)"), "\(listing.stdout)")
        #expect(listing.stdout.contains("1 orphaned item, 1 file to delete, 1 orphaned source record"), "\(listing.stdout)")
        #expect(try duplicates()["sources"] as? Int == 3, "listing drops nothing")

        let deleted = try workspace.run(["prune", job, "--delete"])
        #expect(deleted.status == 0 && deleted.stdout.contains("dropped\t\(gone)"), "\(deleted.stdout)\(deleted.stderr)")
        let after = try duplicates()
        #expect(after["sources"] as? Int == 2 && (after["exact"] as? [Any])?.isEmpty == true, "the gone copy is no duplicate of anything: \(after)")
        #expect(try workspace.run(["manifest", job]).status == 0)
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: workspace.path("site/images.json")))) as? [String: Any])
        let sources = try #require(manifest["sources"] as? [[String: Any]])
        #expect(sources.map { $0["key"] as? String ?? "" } == ["fig-bowl.jpg", "friends.jpg"].map { workspace.path("in/" + $0) })
        #expect(sources.allSatisfy { ($0["derived"] as? [String: Any])?.keys.sorted() == ["dhash", "thumbhash"] && $0["width"] != nil },
                "the others keep their facts and values: \(sources)")
        let again = try workspace.run(["prune", job])
        #expect(!again.stdout.contains("source record"), "nothing left to drop: \(again.stdout)")
    }
}
