import Foundation
import Testing
import TestSupport

/// A block of two widths in WebP and JPEG under one SSIMULACRA2 target, over real photos, beside the
/// same widths as PNG: the exact pixels each encoder is given, to score the outputs against.
private func targetJob(_ workspace: Workspace, target: Double = 72, photos: [String] = ["friends.jpg", "fig-bowl.jpg", "aitzgorri.jpg"],
                       maxEncodes: Int = 20) throws -> String {
    try workspace.copyFixtures(photos.map { "photos/" + $0 }, to: "in")
    return try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "web", "path": "site/{stem}-{width}.{format}", "widths": [240, 480], "formats": ["webp", "jpeg"], "chain": [],
                      "quality": {"ssimulacra2": \(target), "maxEncodes": \(maxEncodes)}},
                     {"name": "exact", "path": "exact/{stem}-{width}.png", "widths": [240, 480], "format": {"type": "png"}, "chain": []}],
         "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
        """)
}

/// The manifest's entries of outputs with a target: (source stem, output name, path, quality, score).
private func targeted(_ workspace: Workspace) throws -> [(stem: String, name: String, path: String, quality: Int, score: Double?)] {
    let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: workspace.path("site/images.json")))) as? [String: Any])
    return (document["sources"] as? [[String: Any]] ?? []).flatMap { source in
        let stem = Paths.splitExtension(Paths.lastComponent(source["path"] as? String ?? "")).stem
        return (source["outputs"] as? [[String: Any]] ?? []).compactMap { output -> (stem: String, name: String, path: String, quality: Int, score: Double?)? in
            guard let quality = output["quality"] as? Int else { return nil }
            return (stem, output["name"] as? String ?? "", output["path"] as? String ?? "", quality, output["score"] as? Double)
        }
    }
}

@Suite("Quality targets: the lowest quality that meets a SSIMULACRA2 score, searched once", .serialized)
struct QualityTargetTests {
    @Test("each output meets its target, and one quality step lower does not: scored again against the exact pixels")
    func reachesTheTargetAndIsMinimal() throws {
        let workspace = try Workspace()
        let job = try targetJob(workspace)
        let run = try workspace.run([job])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("quality targets: 12 outputs"), "\(run.stdout)")
        let outputs = try targeted(workspace)
        #expect(outputs.count == 12)
        try Self.libvips.get()
        for output in outputs {
            let width = output.name.contains("-240-") ? 240 : 480
            let exact = workspace.path("exact/\(output.stem)-\(width).png")
            let written = try ImageComparison.score(reference: exact, distorted: workspace.path("site/" + output.path))
            let score = try #require(output.score, "\(output.name) of \(output.stem) has no score")
            #expect(abs(written - score) < 0.01, "\(output.stem) \(output.name): manifest \(score), the file scores \(written)")
            #expect(score >= 72, "\(output.stem) \(output.name): \(score)")
            // The step below, encoded as the output's own encoder does, scores under the target.
            let format = output.name.hasSuffix("webp") ? #"{"type": "webp"}"# : #"{"type": "jpeg"}"#
            let encoder = try #require(try readEncoder(ObjectReader(JSONValue(parsing: format), path: "format")) as? any QualitySearchable)
            let below = try Self.score(encoder.at(quality: output.quality - 1), exact)
            #expect(below < 72, "\(output.stem) \(output.name): quality \(output.quality - 1) scores \(below), at or above the target")
        }
        // Photos differ: the answers are not one number.
        #expect(Set(outputs.map(\.quality)).count > 3, "\(outputs.map(\.quality))")
    }

    /// runner's own libvips set-up, once per test process, after ImageProbe's.
    static let libvips: Result<Void, any Error> = {
        ImageProbe.startVips()
        return Result { try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true) }
    }()

    /// `exact` (a PNG) encoded by `encoder`, decoded and scored against itself.
    static func score(_ encoder: any OutputEncoder, _ exact: String) throws -> Double {
        let folder = NSTemporaryDirectory() + "runner-quality-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/below." + (type(of: encoder).extensions.first ?? "img")
        try encoder.encode(ImageComparison.opened(exact), metadata: .strip).write(to: URL(fileURLWithPath: path))
        return try ImageComparison.score(reference: exact, distorted: path)
    }

    @Test("a rerun searches nothing; --force and a resumed run encode each output once at the quality found")
    func searchedOnce() throws {
        let workspace = try Workspace()
        let job = try targetJob(workspace, photos: ["friends.jpg", "fig-bowl.jpg", "aitzgorri.jpg", "picos-de-europa.jpg"])
        // Killed while the third source renders: the first two are done, the rest not.
        let pauses = try Pauses("worker.task@in/friends", in: workspace)
        let first = try workspace.start([job, "--log-format", "json", "-j", "1"], environment: pauses.environment)
        #expect(pauses.wait(for: "worker.task", of: first).count == 1)
        #expect(first.waitUntil { itemEvents(first) >= 12 })
        first.signal(SIGKILL)
        _ = first.wait()
        let database = try StateDatabase(path: workspace.path("state/job.sqlite"))
        #expect(try database.count(state: "done") == 12, "aitzgorri and fig-bowl (plan order) are done: 2 × (4 targets + 2 PNGs)")

        let resumed = try workspace.run([job, "--log-format", "json"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let summary = try #require(summaryEvent(resumed.stdout))
        let totals = try #require(summary["qualityTargets"] as? [String: Int])
        #expect(totals["outputs"] == 8, "only the two sources not done before are searched: \(totals)")
        #expect(summary["upToDate"] as? Int == 12)
        let found = try targeted(workspace).sorted { ($0.stem, $0.name) < ($1.stem, $1.name) }
        #expect(found.count == 16)

        let rerun = try workspace.run([job, "--log-format", "json"])
        #expect((summaryEvent(rerun.stdout)?["qualityTargets"] as? [String: Int])?["encodes"] == 0)

        let forced = try workspace.run([job, "--force", "--log-format", "json"])
        let forcedTotals = try #require(summaryEvent(forced.stdout)?["qualityTargets"] as? [String: Int])
        #expect(forcedTotals["outputs"] == 16 && forcedTotals["encodes"] == 16, "one encode each: \(forcedTotals)")
        let again = try targeted(workspace).sorted { ($0.stem, $0.name) < ($1.stem, $1.name) }
        #expect(again.map(\.quality) == found.map(\.quality) && again.map(\.score) == found.map(\.score))
    }

    @Test("runner preview and the manifest show each output's quality and score; the summary the bytes against the default")
    func shown() throws {
        let workspace = try Workspace()
        let job = try targetJob(workspace, photos: ["fig-bowl.jpg"])
        let preview = try workspace.run(["preview", job, workspace.path("in/fig-bowl.jpg"), "--out", workspace.path("preview")])
        #expect(preview.status == 0, "\(preview.stderr)")
        let lines = preview.stdout.split(separator: "\n").filter { $0.hasPrefix("web-") }
        #expect(lines.count == 4)
        for line in lines {
            #expect(line.contains(", SSIMULACRA2 ") && line.contains("(target 72") && line.contains("at the default"), "\(line)")
        }
        let run = try workspace.run([job])
        #expect(run.stdout.contains("fewer bytes than at their fixed default quality") || run.stdout.contains("more bytes than"), "\(run.stdout)")
        let outputs = try targeted(workspace)
        #expect(outputs.count == 4 && outputs.allSatisfy { $0.score != nil })
        // What preview printed is what the run wrote.
        for output in outputs {
            #expect(lines.contains { $0.hasPrefix(output.name + " ") && $0.contains("quality \(output.quality),") }, "\(output.name)")
        }
    }

    @Test("an image the metric cannot score (a 1 px line, one colour) gets the format's default and says why")
    func unscorable() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        try VipsCLI.run("vips", ["black", workspace.path("in/line.png"), "300", "1", "--bands", "3"])
        try VipsCLI.run("vips", ["black", workspace.path("flat.v"), "64", "64", "--bands", "3"])
        try VipsCLI.run("vips", ["linear", workspace.path("flat.v"), workspace.path("in/flat.png"), "1", "120", "--uchar"])
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "web", "path": "site/{stem}.webp", "chain": [], "format": {"type": "webp", "quality": {"ssimulacra2": 75}}}],
             "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
            """)
        let line = try workspace.run(["preview", job, workspace.path("in/line.png"), "--out", workspace.path("p")])
        #expect(line.stdout.contains("quality 80, the format's default: 300x1 is below SSIMULACRA2's smallest size, 8x8"), "\(line.stdout)")
        let flat = try workspace.run(["preview", job, workspace.path("in/flat.png"), "--out", workspace.path("p")])
        #expect(flat.stdout.contains("quality 80, the format's default: a single colour, which every quality reproduces"), "\(flat.stdout)")
        let run = try workspace.run([job])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("2 not scorable"), "\(run.stdout)")
        let outputs = try targeted(workspace)
        #expect(outputs.count == 2 && outputs.allSatisfy { $0.quality == 80 && $0.score == nil })
        let report = try workspace.run(["status", job])
        #expect(report.stdout.contains("quality targets: 2 outputs"), "\(report.stdout)")
        // Said where warnings are looked for.
        let failed = try workspace.run(["failed", job])
        #expect(failed.stdout.contains("not scored (a single colour, which every quality reproduces): the format's default quality 80"),
                "\(failed.stdout)")
    }

    @Test("a search that stops at maxEncodes keeps its lowest passing encode and says which output stopped and what it got")
    func capped() throws {
        let workspace = try Workspace()
        // Two encodes from the default cannot close the bracket on a photo that wants far less than 80.
        let job = try targetJob(workspace, target: 60, photos: ["fig-bowl.jpg"], maxEncodes: 2)
        let run = try workspace.run([job])
        #expect(run.status == 0, "\(run.stderr)")
        let outputs = try targeted(workspace)
        #expect(outputs.allSatisfy { ($0.score ?? 0) >= 60 }, "\(outputs)")
        let failed = try workspace.run(["failed", job])
        let stopped = failed.stdout.split(separator: "\n").filter { $0.contains("the quality search stopped at maxEncodes") }
        #expect(!stopped.isEmpty && run.stdout.contains("stopped at maxEncodes"), "\(failed.stdout)\n\(run.stdout)")
        for line in stopped { #expect(line.contains("web-") && line.contains("(target 60)"), "\(line)") }
    }

    @Test("a target out of range, on a format with no quality, beside a number, or with lossless coding is a job-file error naming the key")
    func badTargets() throws {
        let workspace = try Workspace()
        let cases: [(String, String)] = [
            (#""format": {"type": "webp", "quality": {"ssimulacra2": 99}}"#, "outputs[0].format.quality.ssimulacra2: must be between 30 and 95"),
            (#""format": {"type": "png", "quality": {"ssimulacra2": 70}}"#, #"outputs[0].format: unknown key "quality""#),
            (#""quality": {"ssimulacra2": 70}, "formats": ["webp", "gif"]"#, "outputs[0].quality: a target needs a format with a quality (jpeg, webp, avif, jxl); outputs[0].formats[1] is gif"),
            (#""quality": {"ssimulacra2": 70}, "formats": ["avif", {"type": "jpeg", "quality": 85}]"#, "outputs[0].formats[1].quality: is given here and as a target in outputs[0].quality: give one"),
            (#""format": {"type": "webp", "lossless": true, "quality": {"ssimulacra2": 70}}"#, "outputs[0].format.quality: a quality target needs lossy coding: lossless is on"),
            (#""format": {"type": "jpeg", "quality": {"ssimulacra2": 70, "maxEncodes": 1}}"#, "outputs[0].format.quality.maxEncodes: must be between 2 and 20"),
            (#""format": {"type": "avif", "quality": {"score": 70}}"#, #"outputs[0].format.quality: unknown key "score""#),
        ]
        for (format, message) in cases {
            let job = try workspace.writeJob("""
                {"version": 1, "sources": [{"path": "in"}], "outputs": [{"name": "o", "path": "out/{stem}.{format}", "chain": [], \(format)}]}
                """)
            let result = try workspace.run(["validate", job])
            #expect(result.status == 2 && result.stderr.contains(message), "\(format): \(result.stderr)")
        }
    }
}
