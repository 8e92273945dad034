import Foundation
import Testing
import TestSupport

/// The demo job from jobs/thumbs.json, pointed at a temporary workspace for outputs and state.
func demoJob(in workspace: Workspace) throws -> String {
    let repository = (Fixtures.root as NSString).deletingLastPathComponent
    var text = try String(contentsOfFile: repository + "/jobs/thumbs.json", encoding: .utf8)
    text = text.replacingOccurrences(of: "../fixtures", with: Fixtures.root)
        .replacingOccurrences(of: "../out", with: workspace.path("out"))
        .replacingOccurrences(of: "../state", with: workspace.path("state"))
    return try workspace.writeJob(text)
}

/// Every source the demo job names.
let demoSources = [
    "photos/aitzgorri.jpg", "photos/bird-lamp.png", "photos/fig-bowl.jpg", "photos/friends.jpg",
    "photos/picos-de-europa.jpg", "photos/wine.webp", "photos/nested/life.jpg", "photos/nested/sunset.jpg",
    "more/a/kleiber.jpg", "more/b/seeding.jpg", "extra/ladybird.jpg", "extra/yellow-flower.jpg",
]

@Suite("The demo job, end to end")
struct DemoJobTests {
    @Test("runs every item and every output opens in libvips at the right size")
    func demoRun() throws {
        let workspace = try Workspace()
        let job = try demoJob(in: workspace)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("24 done, 0 failed"))

        let thumbs = workspace.files(in: "out/thumbs")
        let large = workspace.files(in: "out/large")
        #expect(thumbs.count == 12)
        #expect(large.count == 12)
        #expect(thumbs.contains("nested/life.webp"))
        #expect(thumbs.contains("a/kleiber.webp"))
        #expect(thumbs.contains("extra/ladybird.webp"))
        for file in thumbs {
            let probe = try #require(ImageProbe.open(workspace.path("out/thumbs/" + file)))
            #expect(probe.width == 256 && probe.height == 256, "\(file)")
            #expect(probe.loader.hasPrefix("webpload"))
        }
        for source in demoSources {
            let original = try #require(ImageProbe.open(Fixtures.path(source)))
            let name = (source as NSString).deletingPathExtension
            let relative = name.replacingOccurrences(of: "photos/", with: "").replacingOccurrences(of: "more/", with: "")
            let output = try #require(ImageProbe.open(workspace.path("out/large/\(relative).jpg")), "\(relative)")
            // inside 1600x1600 without enlarging: the fixtures are smaller, so they keep their size.
            #expect(output.width == original.width && output.height == original.height, "\(source)")
            #expect(output.interpretation == "srgb")
        }
        let state = try StateDatabase(path: workspace.path("state/thumbs.sqlite"))
        #expect(try state.count(state: "done") == 24)
        #expect(try state.integrity() == "ok")
    }

    @Test("a second run is all up to date and touches no output")
    func incrementalSkip() throws {
        let workspace = try Workspace()
        let job = try demoJob(in: workspace)
        #expect(try workspace.run([job]).status == 0)
        let before = workspace.modificationDate("out/thumbs/friends.webp")
        let again = try workspace.run([job])
        #expect(again.status == 0)
        #expect(again.stdout.contains("0 done, 0 failed, 24 up to date"))
        #expect(workspace.modificationDate("out/thumbs/friends.webp") == before)

        let plan = try workspace.run(["plan", job])
        #expect(plan.stdout.contains("0 to run, 0 to revalidate, 24 up to date, 0 blocked, 0 orphaned"))
    }

    @Test("editing one output's chain re-runs that output's items only")
    func chainChange() throws {
        let workspace = try Workspace()
        let job = try demoJob(in: workspace)
        #expect(try workspace.run([job]).status == 0)
        let thumbBefore = workspace.modificationDate("out/thumbs/friends.webp")
        let text = try String(contentsOfFile: job, encoding: .utf8)
            .replacingOccurrences(of: "{\"op\": \"sharpen\", \"sigma\": 0.5}", with: "{\"op\": \"sharpen\", \"sigma\": 0.8}")
        try workspace.writeJob(text)

        // The plan, listed as JSON (streamed item by item), says which items will run.
        let plan = try workspace.run(["plan", job, "--json", "--list"])
        #expect(plan.status == 0, "\(plan.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])
        #expect(object["toRun"] as? Int == 12)
        #expect(object["upToDate"] as? Int == 12)
        let items = try #require(object["items"] as? [[String: String]])
        #expect(items.count == 24)
        let pendingOutputs = items.filter { $0["status"] == "pending" }.compactMap { $0["output"] }
        #expect(pendingOutputs.count == 12 && !pendingOutputs.contains { $0.contains("/thumbs/") })
        let result = try workspace.run([job])
        #expect(result.status == 0)
        #expect(result.stdout.contains("12 done, 0 failed, 12 up to date"), "\(result.stdout)")
        #expect(workspace.modificationDate("out/thumbs/friends.webp") == thumbBefore)

        // An equal chain written differently (0.80, explicit defaults) is the same chain.
        let same = text.replacingOccurrences(of: "\"sigma\": 0.8}", with: "\"sigma\": 0.80, \"m1\": 0, \"m2\": 3}")
        try workspace.writeJob(same)
        #expect(try workspace.run([job]).stdout.contains("0 done, 0 failed, 24 up to date"))
    }

    @Test("spelling colour as color, or colours as colors, re-runs nothing")
    func colourSpelling() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "extra/ladybird.jpg"], to: "in")
        func job(_ colour: String, _ colours: String) throws -> String {
            try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}], "state": "state.sqlite",
             "outputs": [{"name": "t", "path": "out/{stem}.png",
                          "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}, {"op": "tint", "\(colour)": "#ff000040"},
                                    {"op": "border", "width": 2, "\(colour)": "#00f"}],
                          "format": {"type": "png", "palette": true, "\(colours)": 16}}]}
            """)
        }
        let british = try workspace.run([try job("colour", "colours")])
        #expect(british.stdout.contains("2 done, 0 failed"), "\(british.stdout) \(british.stderr)")
        let american = try workspace.run([try job("color", "colors")])
        #expect(american.status == 0)
        #expect(american.stdout.contains("0 done, 0 failed, 2 up to date"), "\(american.stdout) \(american.stderr)")
    }

    @Test("--force redoes everything; a deleted output is redone alone")
    func forceAndMissingOutput() throws {
        let workspace = try Workspace()
        let job = try demoJob(in: workspace)
        let first = try workspace.run([job])
        #expect(first.status == 0, "\(first.stdout) \(first.stderr)")
        try FileManager.default.removeItem(atPath: workspace.path("out/large/friends.jpg"))
        let repair = try workspace.run([job])
        #expect(repair.stdout.contains("1 done, 0 failed, 23 up to date"), "\(repair.stdout)")
        #expect(ImageProbe.open(workspace.path("out/large/friends.jpg")) != nil)
        let forced = try workspace.run([job, "--force"])
        #expect(forced.stdout.contains("24 done, 0 failed, 0 up to date"))
    }

    @Test("status and failed read the state database")
    func statusReports() throws {
        let workspace = try Workspace()
        let job = try demoJob(in: workspace)
        #expect(try workspace.run([job, "--quiet"]).status == 0)
        let status = try workspace.run(["status", job, "--json"])
        #expect(status.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((object["items"] as? [String: Int])?["done"] == 24)
        #expect((object["runs"] as? [[String: Any]])?.first?["exitCode"] as? Int == 0)
        let failed = try workspace.run(["failed", job])
        #expect(failed.stdout.contains("no failed items"))
    }

    @Test("--log-format json prints one event per line")
    func jsonLog() throws {
        let workspace = try Workspace()
        let job = try demoJob(in: workspace)
        let result = try workspace.run([job, "--log-format", "json"])
        #expect(result.status == 0)
        let events = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(events.first?["event"] as? String == "plan")
        #expect(events.count { $0["event"] as? String == "item" } == 24)
        #expect(events.last?["event"] as? String == "summary")
        #expect(events.last?["done"] as? Int == 24)
    }
}
