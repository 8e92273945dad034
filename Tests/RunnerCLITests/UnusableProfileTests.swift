import Foundation
import Testing
import TestSupport

/// An embedded ICC profile libvips cannot use (here 7 bytes of garbage) is treated as absent,
/// as browsers do: the pixels are fine, so the item renders as sRGB and carries a warning.
@Suite("An unusable ICC profile is a warning, not a failure")
struct UnusableProfileTests {
    static let brokenProfile: [UInt8] = Array("garbage".utf8)

    /// `in/`: grey and colour JPEGs with a 7-byte profile, and a truncated JPEG the same worker takes
    /// right after the colour one (by name), whose message must be its own.
    static func sources(in workspace: Workspace) throws {
        try workspace.copyFixtures(["broken/truncated.jpg"], to: "in")
        try FileManager.default.moveItem(atPath: workspace.path("in/truncated.jpg"), toPath: workspace.path("in/d-truncated.jpg"))
        for (fixture, name) in [("formats/grey.jpg", "grey"), ("formats/photo.jpg", "colour")] {
            let base = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(fixture))))
            let broken = JPEGMetadata.inserting([(JPEGMetadata.app2, JPEGMetadata.icc(brokenProfile))], into: base)
            try Data(broken).write(to: URL(fileURLWithPath: workspace.path("in/\(name)-bad-icc.jpg")))
        }
    }

    static let job = """
        {"version": 1, "sources": [{"path": "in"}], "state": "state.sqlite", "outputs": [
         {"name": "thumb", "path": "out/thumb/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}],
          "format": {"type": "jpeg"}},
         {"name": "full", "path": "out/full/{stem}.png", "chain": [], "format": {"type": "png"}, "keepIcc": true}]}
        """

    static let warning = "ignored the embedded ICC profile (7 bytes): it is damaged or not for these pixels; colours taken as sRGB"

    @Test("the items render, say why once, and store the warning; other items' messages stay their own")
    func warnedNotFailed() throws {
        let workspace = try Workspace()
        try Self.sources(in: workspace)
        let job = try workspace.writeJob(Self.job)

        let run = try workspace.run([job, "-j", "1", "--log-format", "json"])
        #expect(run.status == 1, "the truncated file fails: \(run.stdout)\(run.stderr)")
        let events = run.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["event"] as? String == "item" }
        let byKey = Dictionary(uniqueKeysWithValues: events.map { (($0["key"] as! String as NSString).lastPathComponent, $0) })
        for key in ["grey-bad-icc.jpg@thumb", "grey-bad-icc.jpg@full", "colour-bad-icc.jpg@thumb", "colour-bad-icc.jpg@full"] {
            #expect(byKey[key]?["state"] as? String == "done", "\(key): \(byKey[key] ?? [:])")
            #expect(byKey[key]?["warning"] as? String == Self.warning, "\(key)")
        }
        let truncated = try #require(byKey["d-truncated.jpg@thumb"])
        #expect(truncated["state"] as? String == "failed" && truncated["kind"] as? String == "decode")
        #expect(truncated["warning"] == nil)
        let message = try #require(truncated["message"] as? String)
        #expect(!message.contains("Icc") && !message.contains("profile"), "another source's words: \(message)")

        // Treated as absent: the decoded pixels unchanged, no profile written even with keepIcc.
        for (name, fixture) in [("grey", "formats/grey.jpg"), ("colour", "formats/photo.jpg")] {
            let output = workspace.path("out/full/\(name)-bad-icc.png")
            #expect(ImageProbe.meanAbsoluteDifference(output, Fixtures.path(fixture)) == 0, "\(name)")
            #expect(try !WrittenMetadata.blocks(inFile: output).contains(.icc), "\(name)")
            #expect(ImageProbe.open(workspace.path("out/thumb/\(name)-bad-icc.jpg"))?.width == 64, "\(name)")
        }

        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        #expect(try state.scalar("SELECT COUNT(*) FROM item WHERE warning = ?", [Self.warning]) == 4)
        #expect(try state.scalar("SELECT COUNT(*) FROM item WHERE warning IS NOT NULL") == 4)

        let status = try workspace.run(["status", job])
        #expect(status.stdout.contains("4 with warnings"), "\(status.stdout)")
        let statusJSON = try JSONSerialization.jsonObject(with: Data(try workspace.run(["status", job, "--json"]).stdout.utf8)) as? [String: Any]
        #expect(statusJSON?["warnings"] as? Int == 4)
        let failed = try workspace.run(["failed", job])
        #expect(failed.stdout.components(separatedBy: "warning: ").count - 1 == 4, "\(failed.stdout)")

        // Text output: one line per item, the message said once.
        let text = try workspace.run([job, "--force", "-j", "1"])
        // Off a terminal each line starts with its time.
        let lines = text.stderr.split(separator: "\n").compactMap { $0.split(separator: " ", maxSplits: 1).last }
            .filter { $0.hasPrefix("warning: ") }
        #expect(lines.count == 4, "\(text.stderr)")
        for line in lines {
            #expect(line.hasSuffix(": " + Self.warning) && line.components(separatedBy: "ICC profile").count == 2, "\(line)")
        }
        let quiet = try workspace.run([job, "--force", "--quiet"])
        #expect(!quiet.stderr.contains("warning: "), "--quiet prints only failures and the summary")
    }

    @Test("a warning is cleared when the item renders cleanly again")
    func clearedOnRerun() throws {
        let workspace = try Workspace()
        try Self.sources(in: workspace)
        let job = try workspace.writeJob(Self.job)
        _ = try workspace.run([job])
        try FileManager.default.copyItem(atPath: Fixtures.path("formats/grey.jpg"), toPath: workspace.path("grey.jpg"))
        try FileManager.default.removeItem(atPath: workspace.path("in/grey-bad-icc.jpg"))
        try FileManager.default.moveItem(atPath: workspace.path("grey.jpg"), toPath: workspace.path("in/grey-bad-icc.jpg"))
        _ = try workspace.run([job])
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        #expect(try state.scalar("SELECT COUNT(*) FROM item WHERE key LIKE '%grey-bad-icc.jpg@%' AND state = 'done' AND warning IS NULL") == 2)
        #expect(try state.scalar("SELECT COUNT(*) FROM item WHERE warning IS NOT NULL") == 2)
    }
}
