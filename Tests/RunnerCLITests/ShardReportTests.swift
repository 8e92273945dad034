import Foundation
import GRDB
import Testing
import TestSupport

/// Every match of `pattern` in `text`, as its capture groups.
private func matches(_ pattern: String, in text: String) throws -> [[String]] {
    text.matches(of: try Regex(pattern).dotMatchesNewlines()).map { match in
        (1..<match.output.count).map { match.output[$0].substring.map(String.init) ?? "" }
    }
}

/// Runs `script` (a function body returning a JSON value) in `page` once it has loaded, in headless
/// Chromium, and returns the value. The page is run from a copy beside it, so its relative links hold.
private func evaluate(_ page: String, _ script: String, height: Int = 1800) throws -> Any {
    let probe = page + ".probe.html"
    defer { try? FileManager.default.removeItem(atPath: probe) }
    let html = try String(contentsOfFile: page, encoding: .utf8)
    try html.replacingOccurrences(of: "</body>", with: """
        <script>window.addEventListener('load', function () {
          document.body.setAttribute('data-probe', JSON.stringify((function () { \(script) })()));
        });</script></body>
        """).write(toFile: probe, atomically: true, encoding: .utf8)
    let dom = try Chromium.dom(of: probe, height: height, budget: 5000)
    let value = try #require(try matches("data-probe=\"([^\"]*)\"", in: dom).first?.first)
    let json = value.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
        .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    return try JSONSerialization.jsonObject(with: Data(json.utf8))
}

/// The chart's text boxes that overlap another ("a | b") or stick out of the chart, its run labels and
/// bars, its smallest text, and how wide the page lays out.
private let chartOverlaps = """
    var texts = Array.from(document.querySelectorAll('svg.chart text'));
    var boxes = texts.map(function (t) { return t.getBoundingClientRect(); });
    var overlaps = [];
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i], b = boxes[j];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
        overlaps.push(texts[i].textContent + ' | ' + texts[j].textContent);
    }
    var chart = document.querySelector('svg.chart').getBoundingClientRect();
    var outside = texts.filter(function (t, i) { var b = boxes[i];
      return b.left < chart.left || b.right > chart.right || b.top < chart.top || b.bottom > chart.bottom; });
    return {overlaps: overlaps, outside: outside.map(function (t) { return t.textContent; }),
            overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth, labels: Array.from(document.querySelectorAll('svg.chart text.run')).map(function (t) { return t.textContent; }),
            bars: document.querySelectorAll('svg.chart rect.bar').length,
            smallest: Math.min.apply(null, boxes.map(function (b) { return b.height; }))};
    """

private func requireChromium() throws {
    if let reason = Chromium.unavailable { try Test.cancel("skipped: \(reason)") }
}

/// A job of 24 sources (six photographs under four names each) with a small thumbnail.
private func shardableJob(_ workspace: Workspace, output: String = """
    {"name": "t", "path": "out/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}}
    """) throws -> String {
    let photos = ["aitzgorri.jpg", "bird-lamp.png", "fig-bowl.jpg", "friends.jpg", "picos-de-europa.jpg", "wine.webp"]
    try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
    for copy in 0..<4 {
        for photo in photos {
            try FileManager.default.copyItem(atPath: Fixtures.path("photos/" + photo), toPath: workspace.path("in/\(copy)-\(photo)"))
        }
    }
    return try workspace.writeJob("""
        {"version": 1, "name": "sharded", "sources": [{"path": "in", "include": ["*"]}], "outputs": [\(output)],
         "state": "state/job.sqlite"}
        """)
}

@Suite("The report and status of a sharded job, and a contact sheet that paints", .serialized)
struct ShardReportTests {
    @Test("16 shards: runs in time order with their shard, a row per shard, status names the shard, no chart label overlaps another")
    func sixteenShards() throws {
        try requireChromium()
        let workspace = try Workspace()
        let job = try shardableJob(workspace)
        // Last shard first, so time order is neither shard order nor database order.
        for index in (0..<16).reversed() {
            #expect(try workspace.run([job, "--shard", "\(index)/16"]).status == 0)
        }
        let written = try workspace.run(["report", job, "--runs", "16"])
        #expect(written.status == 0, "\(written.stderr)")
        let report = workspace.path("state/job-report.html")
        let html = try String(contentsOfFile: report, encoding: .utf8)

        let runs = try matches("<tr class=\"run\" data-run=\"(\\d+)\" data-shard=\"([^\"]+)\"><td class=\"num\">#\\d+</td><td class=\"num\">([^<]+)</td><td><time datetime=\"([^\"]+)\"", in: html)
        #expect(runs.count == 16, "\(html.prefix(3000))")
        #expect(runs.allSatisfy { $0[0] == "1" && $0[1] == $0[2] }, "each shard's own run 1, with its shard in a column: \(runs)")
        #expect(runs.map { $0[1] } == (0..<16).map { "\($0)/16" }, "newest first: shard 0 ran last")
        let started = runs.map { $0[3] }
        #expect(started == started.sorted(by: >), "in time order: \(started)")

        let shards = try matches("<tr class=\"shard\" data-shard=\"([^\"]+)\"><td class=\"num\">[^<]+</td><td class=\"num\">(\\d+)</td>", in: html)
        #expect(shards.map { $0[0] } == (0..<16).map { "\($0)/16" }, "a row per shard")
        #expect(shards.compactMap { Int($0[1]) }.reduce(0, +) == 24, "their done items add up to the job's")

        let status = try workspace.run(["status", job, "--runs", "16"])
        for index in 0..<16 { #expect(status.stdout.contains("run 1 of shard \(index)/16 "), "\(status.stdout)") }

        let chart = try #require(try evaluate(report, chartOverlaps) as? [String: Any])
        #expect((chart["overlaps"] as? [String]) == [] && (chart["outside"] as? [String]) == [], "\(chart)")
        #expect(chart["overflow"] as? Int == 0, "nothing wider than the window: \(chart)")
        #expect(chart["bars"] as? Int == 16)
        #expect((chart["labels"] as? [String])?.count == 16, "every bar named by its shard at 16: \(chart)")
        try Chromium.screenshot(of: report, to: try TestArtifacts.path("report-16-shards.png"), height: 1400)
    }

    @Test("a job moved to 4 shards reads as it did unsharded: counts, failures, warnings, blacklist, duplicates, sheet, failed, manifest")
    func shardedReadsAsUnsharded() throws {
        let workspace = try Workspace()
        let job = try shardableJob(workspace)
        try workspace.copyFixtures(["broken/truncated.jpg", "broken/html.jpg"], to: "in")
        // Renders with a warning: an ICC profile libvips cannot use.
        let photo = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("formats/photo.jpg"))))
        try Data(JPEGMetadata.inserting([(JPEGMetadata.app2, JPEGMetadata.icc(Array("garbage".utf8)))], into: photo))
            .write(to: URL(fileURLWithPath: workspace.path("in/bad-icc.jpg")))
        let server = try HTTPTestServer()
        try String(contentsOfFile: job, encoding: .utf8)
            .replacingOccurrences(of: #"[{"path": "in", "include": ["*"]}]"#, with: #"[{"path": "in", "include": ["*"]}, {"url": "\#(server.url("/status/404/gone.jpg"))"}]"#)
            .replacingOccurrences(of: #""state":"#, with: #""derive": ["dhash", "thumbhash", "dominant"], "state":"#)
            .replacingOccurrences(of: #""outputs": [{"#, with: #""outputs": [{"name": "s", "path": "out/s/{stem}.webp", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "webp"}}, {"#)
            .write(toFile: job, atomically: true, encoding: .utf8)
        // What every read command says of the job: the report's sections but its runs and shards (the
        // contact sheet's tiles as a set: items recorded in one batch are as new as each other), its times' "ago" left out.
        func reads() throws -> [String] {
            #expect(try workspace.run(["report", job]).status == 0)
            let html = try String(contentsOfFile: workspace.path("state/job-report.html"), encoding: .utf8)
                .replacingOccurrences(of: #"<time datetime="([^"]+)" title="[^"]*">"#, with: "<time datetime=\"$1\">", options: .regularExpression)
            let sections = try ["items", "failures", "warnings", "blacklist", "duplicates"].map { id in
                try #require(try matches("(<section id=\"\(id)\">.*?</section>)", in: html).first?.first, "no section \(id)")
            }
            let tiles = try matches("(<figure class=\"tile[^\"]*\" title=\"[^\"]*→.*?</figure>)", in: html).map { $0[0] }.sorted()
            let status = try #require(try JSONSerialization.jsonObject(with: Data(try workspace.run(["status", job, "--json"]).stdout.utf8)) as? [String: Any])
            let items = (status["items"] as? [String: Int] ?? [:]).sorted { $0.key < $1.key }
            return try sections + tiles + ["\(items)", "\(status["warnings"] ?? "")"]
                + [["failed", job], ["failed", job, "--json"], ["duplicates", job], ["manifest", job]].map { try workspace.run($0).stdout }
        }
        #expect(try workspace.run([job]).status == 1)
        #expect(try workspace.run([job]).status == 0, "the second run carries the failures over and records the URL blocked")
        let unsharded = try reads()
        #expect(unsharded[0].contains("id=\"count-done\"><span class=\"n\">50</span> done")
                && unsharded[0].contains("id=\"count-blocked\"><span class=\"n\">2</span> blocked"), "\(unsharded[0])")
        #expect(unsharded[2].contains("<tr class=\"warning\">") && unsharded[3].contains("gone.jpg") && unsharded.count == 5 + 54 + 6)
        for index in 0..<4 {
            let result = try workspace.run([job, "--shard", "\(index)/4", "--log-format", "json"])
            #expect(result.status == 0 && summaryEvent(result.stdout)?["done"] as? Int == 0, "shard \(index) took the records over: \(result.stdout)")
        }
        let sharded = try reads()
        #expect(unsharded.count == sharded.count)
        for (before, after) in zip(unsharded, sharded) { #expect(before == after) }
    }

    @Test("256 shards: the chart of 256 runs keeps its labels apart and names shards across the axis")
    func twoHundredFiftySixShards() throws {
        try requireChromium()
        let workspace = try Workspace()
        let job = try shardableJob(workspace)
        #expect(try workspace.run([job, "--shard", "0/256"]).status == 0)
        // The other 255 shards' databases: copies of shard 0's, each started 3 s after the one before.
        for index in 1..<256 {
            let path = workspace.path("state/job.shard-\(index)-of-256.sqlite")
            try FileManager.default.copyItem(atPath: workspace.path("state/job.shard-0-of-256.sqlite"), toPath: path)
            let database = try DatabaseQueue(path: path)
            try database.write { db in
                try db.execute(sql: "UPDATE run SET started_at = started_at + ?1 * 3, ended_at = started_at + ?1 * 3 + 0.5 + (?1 % 7) * 0.2, done = 1 + ?1 % 5",
                               arguments: [index])
            }
            try database.close()
        }
        let written = try workspace.run(["report", job, "--runs", "256"])
        #expect(written.status == 0, "\(written.stderr)")
        let report = workspace.path("state/job-report.html")
        let chart = try #require(try evaluate(report, chartOverlaps) as? [String: Any])
        #expect((chart["overlaps"] as? [String]) == [] && (chart["outside"] as? [String]) == [], "\(chart)")
        #expect(chart["overflow"] as? Int == 0, "nothing wider than the window: \(chart)")
        #expect(chart["bars"] as? Int == 256)
        let labels = chart["labels"] as? [String] ?? []
        #expect(labels.count >= 12 && labels.last == "255/256", "shards named across the axis, the newest last: \(labels)")
        #expect((chart["smallest"] as? Double ?? 0) >= 10, "text at a readable size: \(chart)")
        try Chromium.screenshot(of: report, to: try TestArtifacts.path("report-256-shards.png"), height: 900)
    }

    @Test("the contact sheet of 1600 px WebPs: a light page of previews made once, every tile painted in a screenshot")
    func lightSheet() throws {
        try requireChromium()
        let workspace = try Workspace()
        let job = try shardableJob(workspace, output: """
            {"name": "large", "path": "out/{stem}.webp", "chain": [{"op": "thumbnail", "width": 1600, "fit": "inside", "enlarge": true}],
             "format": {"type": "webp", "quality": 80}}
            """)
        #expect(try workspace.run([job]).status == 0)
        #expect(try workspace.run(["report", job]).status == 0)
        let report = workspace.path("state/job-report.html")
        let html = try String(contentsOfFile: report, encoding: .utf8)
        func size(_ relative: String) throws -> Int {
            let path = workspace.path("state/" + (relative.removingPercentEncoding ?? relative))
            return try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        }
        let images = try matches("<img class=\"output[^\"]*\" src=\"([^\"]+)\"", in: html).map { $0[0] }
        let outputs = try workspace.files(in: "out").map { try #require(try FileManager.default.attributesOfItem(atPath: workspace.path("out/" + $0))[.size] as? Int) }
        let weight = html.utf8.count + (try images.map(size).reduce(0, +))
        print("contact sheet of 24 outputs (\(outputs.reduce(0, +)) bytes): page weighs \(weight) bytes")
        #expect(images.count == 24 && images.allSatisfy { $0.hasPrefix("job-report-previews/") }, "\(images)")
        #expect(weight < 24 * 12_000 + 150_000 && weight * 8 < outputs.reduce(0, +), "\(weight) bytes against outputs of \(outputs)")
        let previews = workspace.files(in: "state/job-report-previews")
        let made = previews.compactMap { workspace.modificationDate("state/job-report-previews/" + $0) }

        // Every tile painted: the screenshot's pixels inside each image are not the empty frame's.
        let layout = try #require(try evaluate(report, """
            return {height: document.documentElement.scrollHeight, tiles: Array.from(document.querySelectorAll('img.output')).map(function (img) {
              var r = img.getBoundingClientRect(); return [r.left + scrollX, r.top + scrollY, r.width, r.height, img.naturalWidth]; })};
            """, height: 1000) as? [String: Any])
        let tiles = try #require(layout["tiles"] as? [[Double]])
        let height = min(try #require(layout["height"] as? Int), 16000)
        let screenshot = try TestArtifacts.path("report-sheet.png")
        try Chromium.screenshot(of: report, to: screenshot, height: height)
        var blank: [Int] = []
        for (index, tile) in tiles.enumerated() {
            let points = [(0.5, 0.5), (0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7)].compactMap { fx, fy in
                ImageProbe.pixel(screenshot, x: Int(tile[0] + tile[2] * fx), y: Int(tile[1] + tile[3] * fy))
            }
            // The empty frame is a checkerboard of #f0f1f4 and #fff.
            let painted = points.filter { pixel in
                [[240.0, 241, 244], [255, 255, 255]].allSatisfy { empty in zip(pixel, empty).contains { abs($0 - $1) > 12 } }
            }
            if tile[4] == 0 || tile[2] < 50 || painted.count < 3 { blank.append(index) }
        }
        #expect(tiles.count == 24 && blank.isEmpty, "tiles not painted: \(blank) of \(tiles.count)")

        // A second report makes nothing again; a changed output gets a new preview, its old one goes.
        #expect(try workspace.run(["report", job]).status == 0)
        #expect(workspace.files(in: "state/job-report-previews") == previews)
        #expect(previews.compactMap { workspace.modificationDate("state/job-report-previews/" + $0) } == made, "made once")
        try FileManager.default.removeItem(atPath: workspace.path("out/0-friends.webp"))
        #expect(try workspace.run([job]).status == 0)
        #expect(try workspace.run(["report", job]).status == 0)
        let after = workspace.files(in: "state/job-report-previews")
        #expect(after.count == 24 && Set(after).subtracting(previews).count == 1, "one preview made again: \(after)")
    }
}
