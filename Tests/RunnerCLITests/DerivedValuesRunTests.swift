import CVips
import Foundation
import Testing
import TestSupport

/// A job over the workspace's `in/` folder with one cropped thumbnail (so nothing keeps a whole
/// frame, and every derived value comes from the derivation's own 100 px decode) and `derive`.
private func derivingJob(_ workspace: Workspace, derive: String, name: String = "job.json") throws -> String {
    try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "height": 64}],
                      "format": {"type": "jpeg"}}],
         "derive": \(derive), "state": "state.sqlite"}
        """, name: name)
}

/// The run's JSON events: its plan and its summary.
private func run(_ workspace: Workspace, _ arguments: [String], exiting statuses: Set<Int32> = [0]) throws
    -> (plan: [String: Any], summary: [String: Any]) {
    let result = try workspace.run(arguments + ["--log-format", "json"])
    #expect(statuses.contains(result.status), "\(result.stderr)")
    let events = jsonEvents(result.stdout)
    let plan = try #require(events.first { $0["event"] as? String == "plan" }, "\(result.stdout)")
    return (plan, try #require(events.last { $0["event"] as? String == "summary" }, "\(result.stdout)"))
}

/// The derived values stored, by source file name and value name.
private func stored(_ workspace: Workspace) throws -> [String: [String: String]] {
    var values: [String: [String: String]] = [:]
    for row in try StateDatabase(path: workspace.path("state.sqlite")).rows("SELECT source_key, name, value FROM derived") {
        values[Paths.lastComponent(row[0]), default: [:]][row[1]] = row[2]
    }
    return values
}

/// What Imaging's derived values make of `path` decoded as the run's own derivation decodes it.
private func expectedValues(_ path: String, _ values: [any DerivedValue]) throws -> [String: String] {
    ImageProbe.startVips()
    let source = try VipsSourceHandle(path: path, byName: true)
    let header = try #require(cvips_open(source.pointer, VIPS_ACCESS_SEQUENTIAL, VIPS_FAIL_ON_ERROR).map {
        ImageHeader(VipsImageHandle(taking: $0, retaining: nil))
    })
    let decoded = try Thumbnail(inside: 100, 100).load(source, header: header,
                                                        settings: DecodeSettings(failOn: .error, autorotate: true, colourSpace: .srgb))
    let frame = try DerivationFrame(decoded)
    return Dictionary(uniqueKeysWithValues: try values.map { (type(of: $0).name, try $0.value(of: frame).compact) })
}

@Suite("Derived values in a run")
struct DerivedValuesRunTests {
    static let photos = ["photos/aitzgorri.jpg", "photos/bird-lamp.png", "photos/wine.webp"]

    @Test("a source whose outputs failed on its content is not decoded again each night for its values")
    func knownFailureDerivesNothing() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/aitzgorri.jpg", "broken/truncated.jpg"], to: "in")
        let job = try derivingJob(workspace, derive: #"["thumbhash", "dhash"]"#)
        let first = try workspace.run([job, "--log-format", "json"])
        #expect(first.status == 1, "the truncated JPEG fails: \(first.stderr)")
        let again = try workspace.run([job, "--log-format", "json"])
        #expect(again.status == 0, "\(again.stderr)")
        let events = jsonEvents(again.stdout)
        let plan = try #require(events.first { $0["event"] as? String == "plan" })
        let summary = try #require(events.last { $0["event"] as? String == "summary" })
        #expect(plan["toDerive"] as? Int == 0 && plan["knownFailures"] as? Int == 1, "\(plan)")
        #expect(summary["workersStarted"] as? Int == 0, "\(summary)")
        #expect(!again.stderr.contains("derive:"), "\(again.stderr)")
    }

    @Test("a run stores each source's derived values, equal to Imaging's on the same decode; a rerun computes none")
    func storedAndIncremental() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(Self.photos, to: "in")
        let job = try derivingJob(workspace, derive: #"["thumbhash", {"value": "blurhash", "x": 3, "y": 3}, "dhash", "phash", "dominant", "focal"]"#)
        let first = try run(workspace, [job])
        #expect(first.plan["toDerive"] as? Int == 18 && first.summary["derived"] as? Int == 18, "\(first)")
        let values = try stored(workspace)
        let derive = try Job.load(path: job).derive.values
        for photo in Self.photos {
            let name = Paths.lastComponent(photo)
            #expect(values[name] == (try expectedValues(Fixtures.path(photo), derive)), "\(name)")
        }
        let sources = try StateDatabase(path: workspace.path("state.sqlite")).rows("SELECT key, bytes, width, height, format, content_hash FROM source ORDER BY key")
        #expect(sources.map { Paths.lastComponent($0[0]) } == ["aitzgorri.jpg", "bird-lamp.png", "wine.webp"])
        #expect(sources.allSatisfy { Int($0[1])! > 0 && Int($0[2])! > 0 && $0[5].count == 16 }, "\(sources)")
        #expect(sources.map { $0[4] } == ["jpeg", "png", "webp"])

        // Up to date: nothing planned, decoded (no worker started) or derived.
        let again = try run(workspace, [job])
        #expect(again.plan["toDerive"] as? Int == 0 && again.summary["derived"] as? Int == 0, "\(again)")
        #expect(again.summary["workersStarted"] as? Int == 0 && again.summary["done"] as? Int == 0, "\(again)")
    }

    @Test("a new derive entry computes only that value for every source and renders nothing; a changed source recomputes its own")
    func newEntryAndChangedSource() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(Self.photos, to: "in")
        let job = try derivingJob(workspace, derive: #"["dhash", "dominant"]"#)
        _ = try run(workspace, [job])
        let before = try stored(workspace)
        let outputs = workspace.files(in: "out").map { ($0, workspace.modificationDate("out/" + $0)) }
        _ = try derivingJob(workspace, derive: #"["dhash", "dominant", "thumbhash"]"#)
        let added = try run(workspace, [job])
        #expect(added.plan["toDerive"] as? Int == 3 && added.plan["toRun"] as? Int == 0, "\(added.plan)")
        #expect(added.summary["derived"] as? Int == 3 && added.summary["done"] as? Int == 0, "\(added.summary)")
        #expect(workspace.files(in: "out").map { ($0, workspace.modificationDate("out/" + $0)) }.elementsEqual(outputs) { $0 == $1 })
        let after = try stored(workspace)
        #expect(after.values.allSatisfy { $0["thumbhash"] != nil } && after.count == 3)
        #expect(after.mapValues { $0.filter { $0.key != "thumbhash" } } == before)

        // Another picture under one source's name: only it is decoded again, all its values recomputed.
        try FileManager.default.removeItem(atPath: workspace.path("in/wine.webp"))
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/fig-bowl.jpg"), toPath: workspace.path("in/wine.webp"))
        let changed = try run(workspace, [job])
        #expect(changed.plan["toDerive"] as? Int == 3 && changed.summary["derived"] as? Int == 3 && changed.summary["done"] as? Int == 1,
                "\(changed)")
        let figBowl = try expectedValues(Fixtures.path("photos/fig-bowl.jpg"), try Job.load(path: job).derive.values)
        #expect(try stored(workspace)["wine.webp"] == figBowl)
    }

    @Test("a URL source's values are stored; a rerun the origin answers 304 computes none; new bytes from the origin recompute them; a failed download derives nothing")
    func remoteSources() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg"), server.url("/status/404/b.jpg")],
                                extra: #", "derive": ["dhash", "thumbhash"]"#)
        // The 404 fails (exit 1) in the first run, and is blocked (exit 0) after.
        func runJob() throws -> (plan: [String: Any], summary: [String: Any]) { try run(workspace, [job], exiting: [0, 1]) }
        let first = try runJob()
        #expect(first.summary["derived"] as? Int == 2 && first.summary["failed"] as? Int == 1, "\(first.summary)")
        let values = try stored(workspace)
        #expect(values.keys.sorted() == ["a.jpg"] && values["a.jpg"]?.keys.sorted() == ["dhash", "thumbhash"], "the 404 derives nothing: \(values)")
        // Its source row: the URL, and the downloader's hash of the bytes served (what exact duplicates compare).
        let source = try StateDatabase(path: workspace.path("state.sqlite")).rows("SELECT key, content_hash FROM source")
        #expect(source.map { $0[0] } == [server.url("/img/a.jpg")] && source.first?[1] == StableHash.ofFile(Fixtures.path("extra/ladybird.jpg"))?.hex,
                "\(source)")

        // Revalidated unchanged (304): nothing to derive, nothing derived.
        let second = try runJob()
        #expect(second.plan["toDerive"] as? Int == 0 && second.summary["derived"] as? Int == 0, "\(second.plan) \(second.summary)")
        #expect(try server.stats().conditional["/img/a.jpg"] == 1)
        #expect(try stored(workspace) == values)

        // A new derive entry, the origin unchanged (304): the cached original gives that value alone, and nothing renders.
        #expect(try remoteJob(workspace, urls: [server.url("/img/a.jpg"), server.url("/status/404/b.jpg")],
                              extra: #", "derive": ["dhash", "thumbhash", "dominant"]"#) == job)
        try server.reset()
        let added = try runJob()
        #expect(added.summary["derived"] as? Int == 1 && added.summary["done"] as? Int == 0, "\(added.summary)")
        #expect(try server.stats().counts["/img/a.jpg"] == 1 && server.stats().conditional["/img/a.jpg"] == 1, "revalidated, not fetched")
        #expect(try stored(workspace)["a.jpg"]?["dominant"]?.hasPrefix("\"#") == true)

        // The origin serves another picture under the same URL: its values are computed again, from the new bytes.
        try server.serve("other")
        let third = try runJob()
        #expect(third.summary["derived"] as? Int == 3 && third.summary["done"] as? Int == 1, "\(third.summary)")
        let changed = try stored(workspace)
        #expect(try StateDatabase(path: workspace.path("state.sqlite")).rows("SELECT content_hash FROM source").first?[0]
                == StableHash.ofFile(Fixtures.path("extra/yellow-flower.jpg"))?.hex)
        #expect(changed["a.jpg"]?["dhash"] != values["a.jpg"]?["dhash"] && changed["a.jpg"]?["thumbhash"] != values["a.jpg"]?["thumbhash"],
                "\(changed)")
        #expect(try runJob().summary["derived"] as? Int == 0, "and then it is up to date again")
    }
}

@Suite("ThumbHash placeholders in the HTML report")
struct ThumbHashReportTests {
    /// Each tile's data URL in `section` of the report (`outputs`, the contact sheet, or `duplicates`), by the file name of its source.
    private func placeholders(_ html: String, section: String = "outputs") -> [String: String] {
        var found: [String: String] = [:]
        let part = html.components(separatedBy: "<section id=\"\(section)\">").dropFirst().first?.components(separatedBy: "</section>").first ?? ""
        for tile in part.components(separatedBy: "<figure class=\"tile\" title=\"").dropFirst() {
            let source = Paths.lastComponent(String(tile.prefix { $0 != " " && $0 != "\"" }))
            guard let start = tile.range(of: "url(data:image/png;base64,") else { continue }
            found[source] = String(tile[start.upperBound...].prefix { $0 != ")" })
        }
        return found
    }

    @Test("a job that derives thumbhash gets each tile's decoded ThumbHash as a PNG behind it, in the contact sheet and the duplicates section; without thumbhash none")
    func placeholderPerTile() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(DerivedValuesRunTests.photos, to: "in")
        try FileManager.default.copyItem(atPath: workspace.path("in/aitzgorri.jpg"), toPath: workspace.path("in/aitzgorri-copy.jpg"))
        let job = try derivingJob(workspace, derive: #"["thumbhash", "dominant", "dhash"]"#)
        #expect(try workspace.run([job]).status == 0)
        let report = try workspace.run(["report", job])
        #expect(report.status == 0, "\(report.stderr)")
        let html = try String(contentsOfFile: workspace.path("state-report.html"), encoding: .utf8)
        let shown = placeholders(html)
        ImageProbe.startVips()
        #expect(shown.keys.sorted() == ["aitzgorri-copy.jpg", "aitzgorri.jpg", "bird-lamp.png", "wine.webp"], "\(shown.keys)")
        // The duplicates section's tiles (the byte copy and its original) carry the same placeholder as their sheet tiles.
        let duplicates = placeholders(html, section: "duplicates")
        #expect(duplicates.keys.sorted() == ["aitzgorri-copy.jpg", "aitzgorri.jpg"] && duplicates.allSatisfy { shown[$0.key] == $0.value },
                "\(duplicates.keys)")
        for (name, values) in try stored(workspace) {
            // The tile's picture is the source's stored hash decoded, and a PNG of the decoded size.
            // Stored as JSON: a quoted string.
            let hash = try #require(Data(base64Encoded: values["thumbhash"]?.trimmingCharacters(in: ["\""]) ?? ""), "\(name)")
            let png = try #require(Data(base64Encoded: shown[name] ?? ""), "\(name): no placeholder")
            #expect(try png == ThumbHash.placeholderPNG(Array(hash)), "\(name)")
            let path = workspace.path("\(name).placeholder.png")
            try png.write(to: URL(fileURLWithPath: path))
            let picture = try #require(ThumbHash.decode(Array(hash)))
            let image = try #require(ImageProbe.open(path), "\(name)")
            #expect(image.width == picture.width && image.height == picture.height, "\(name)")
        }
        // Over the dominant colour, in one style attribute.
        #expect(html.contains("center/contain no-repeat,#"))

        _ = try derivingJob(workspace, derive: #"["dominant"]"#)
        #expect(try workspace.run([job]).status == 0)
        #expect(try workspace.run(["report", job]).status == 0)
        let without = try String(contentsOfFile: workspace.path("state-report.html"), encoding: .utf8)
        #expect(placeholders(without).isEmpty && !without.contains("data:image/png"))
        #expect(without.components(separatedBy: "data-dominant=\"#").count - 1 == 4)
    }
}
