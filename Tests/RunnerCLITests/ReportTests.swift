import Foundation
import GRDB
import Testing
import TestSupport

/// Every match of `pattern` in `text`, as its capture groups.
private func captures(_ pattern: String, in text: String) throws -> [[String]] {
    text.matches(of: try Regex(pattern).dotMatchesNewlines()).map { match in
        (1..<match.output.count).map { match.output[$0].substring.map(String.init) ?? "" }
    }
}

/// `text` as a browser serializes it inside an element.
private func domText(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
}

private func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

/// A table row's cells as a person reads them (tags dropped).
private func cells(_ row: String) throws -> [String] {
    try captures("<td[^>]*>(.*?)</td>", in: row).map { $0[0].replacingOccurrences(of: "<[^>]+>", with: "", options: .regularExpression) }
}

/// Skips the test when chromium is missing and cannot be installed.
private func requireChromium() throws {
    if let reason = Chromium.unavailable { try Test.cancel("skipped: \(reason)") }
}

@Suite("runner report: a page a person would rather look at", .serialized)
struct ReportTests {
    @Test("a job with failures, in a real browser: counts, runs, failures beside their sources, warnings, the blacklist, every output loaded")
    func jobWithFailuresInBrowser() throws {
        try requireChromium()
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "photos/aitzgorri.jpg",
                                    "photos/picos-de-europa.jpg", "broken/truncated.jpg", "broken/html.jpg"], to: "in")
        // A file name that needs escaping in HTML and in a URL.
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/wine.webp"), toPath: workspace.path("in/café #1 & <b>.webp"))
        // Renders with a warning: an ICC profile libvips cannot use.
        let photo = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("formats/photo.jpg"))))
        try Data(JPEGMetadata.inserting([(JPEGMetadata.app2, JPEGMetadata.icc(Array("garbage".utf8)))], into: photo))
            .write(to: URL(fileURLWithPath: workspace.path("in/bad-icc.jpg")))
        // A URL that is blacklisted (404), and one that renders.
        let server = try HTTPTestServer()
        let job = try workspace.writeJob("""
            {"version": 1, "name": "photos <b>&</b> friends",
             "sources": [{"path": "in", "include": ["*"]}, {"url": "\(server.url("/status/404/gone.jpg"))"},
                         {"url": "\(server.url("/img/remote.jpg"))"}],
             "outputs": [{"name": "thumb", "path": "out/thumbs/{stem}.webp",
                          "chain": [{"op": "thumbnail", "width": 240, "height": 240, "fit": "inside"}], "format": {"type": "webp"}},
                         {"name": "small", "path": "out/small/{stem}.jpg",
                          "chain": [{"op": "thumbnail", "width": 120, "height": 120}], "format": {"type": "jpeg"}}],
             "state": "state/job.sqlite"}
            """)
        #expect(try workspace.run([job]).status == 1)
        #expect(try workspace.run([job]).status == 0, "the second run carries the failures over")

        let written = try workspace.run(["report", job])
        #expect(written.status == 0, "\(written.stderr)")
        let report = workspace.path("state/job-report.html")
        #expect(written.stdout == report + "\n", "prints where the report is, beside the state database, named after it")
        #expect(workspace.files(in: "state").filter { $0.hasSuffix(".html") } == ["job-report.html"], "one page for 18 items")

        let dom = try Chromium.dom(of: report)
        // The job's name is text, not markup.
        #expect(dom.contains("<h1>photos &lt;b&gt;&amp;&lt;/b&gt; friends</h1>"), "\(dom.prefix(2000))")
        #expect(dom.contains("id=\"count-done\"><span class=\"n\">14</span> done"))
        #expect(dom.contains("id=\"count-failed\"><span class=\"n\">4</span> failed"))
        #expect(dom.contains("id=\"count-blocked\"><span class=\"n\">2</span> blocked"))
        #expect(dom.contains("id=\"count-warnings\"><span class=\"n\">2</span> with warnings"))

        // Newest run first: the second found everything up to date and the URL blocked; the first had the failures.
        let runs = try captures("<tr class=\"run\" data-run=\"\\d+\">(.*?)</tr>", in: dom).map { try cells($0[0]) }
        #expect(runs.count == 2)
        // run, started, duration, done, failed, up to date, blocked, items/s, outcome, exit, libvips
        #expect(runs.first.map { [$0[3], $0[4], $0[5], $0[6], $0[8], $0[9]] } == ["0", "0", "14", "2", "finished", "0"])
        #expect(runs.allSatisfy { $0.last == ImageProbe.libvipsVersion }, "\(runs)")
        #expect(runs.last.map { [$0[3], $0[4], $0[5], $0[6], $0[8], $0[9]] } == ["14", "6", "0", "0", "finished", "1"])
        #expect(Double(runs.last?[7] ?? "") ?? 0 > 0, "items per second of the run that did the work")
        #expect(count("class=\"bar\"", in: dom) == 2, "one bar per run in the throughput chart")

        let warnings = try captures("<tr class=\"warning\">(.*?)</tr>", in: dom).map { try cells($0[0]) }
        #expect(warnings.map { [$0[0], $0[1]] } == [["bad-icc.jpg", "small"], ["bad-icc.jpg", "thumb"]])
        #expect(warnings.allSatisfy { $0[2].hasPrefix("ignored the embedded ICC profile (7 bytes)") }, "\(warnings)")
        let blacklist = try captures("<tr class=\"blocked\">(.*?)</tr>", in: dom).map { try cells($0[0]) }
        #expect(blacklist.map { [$0[0], $0[2], $0[4]] } == [[server.url("/status/404/gone.jpg"), "HTTP 404", "1×"]], "\(blacklist)")

        let failed = try workspace.run(["failed", job, "--json"])
        let records = try #require(try JSONSerialization.jsonObject(with: Data(failed.stdout.utf8)) as? [String: Any])["failed"] as? [[String: Any]]
        let messages = Dictionary((records ?? []).map { (($0["source"] as! String as NSString).lastPathComponent, $0["message"] as! String) }) { a, _ in a }
        #expect(try captures("<div class=\"kind\" data-kind=\"([^\"]+)\"><h3>.*?</span> (\\d+) items", in: dom) == [["decode", "4"]])
        let rows = try captures("<li class=\"failure([^\"]*)\" data-source=\"[^\"]*/([^/\"]+)\">(.*?)</li>", in: dom)
        #expect(rows.map { $0[1] } == ["html.jpg", "truncated.jpg"])
        for row in rows {
            #expect(row[2].contains("→ small, thumb"), "both outputs of the source in one row")
            let message = try #require(messages[row[1]])
            #expect(row[2].contains("<pre class=\"message\">\(domText(message))</pre>"), "\(row[2])")
        }
        // The truncated JPEG still opens in a browser: shown beside its error. The HTML page named .jpg is just the error.
        #expect(rows.last?[0] == "")
        #expect(try captures("<figure class=\"source\"><img class=\"source\"[^>]*><figcaption>the source as it is · (\\d+)×(\\d+)</figcaption>",
                             in: rows.last?[2] ?? "").count == 1, "\(rows.last?[2] ?? "")")
        #expect(rows.first?[0] == " no-source" && rows.first?[2].contains("<img") == false)

        // The contact sheet: failed first, then every output, each loaded by the browser.
        let tiles = try captures("<figure class=\"tile([^\"]*)\"", in: dom).map { $0[0] }
        #expect(tiles == Array(repeating: " failed", count: 4) + Array(repeating: "", count: 14))
        #expect(try captures("data-images-loaded=\"([^\"]*)\"", in: dom) == [["14/14"]])
        #expect(count("<div class=\"name\"><span title=\"\(server.url("/img/remote.jpg"))\">remote.jpg</span></div>", in: dom) == 2,
                "a URL source is named by its file name")
        #expect(dom.contains("alt=\"café #1 &amp; &lt;b&gt;.webp\""))
        #expect(try captures("<span class=\"dims\">(\\d+)×(\\d+) · </span>", in: dom).count == 14, "pixel sizes from the loaded images")
        #expect(!dom.contains("<b>"), "no markup from names or messages")

        let screenshot = try TestArtifacts.path("report.png")
        try Chromium.screenshot(of: report, to: screenshot, height: 2400)
        print("report screenshot: \(screenshot)")
    }

    @Test("two jobs sharing a state folder each get their own report, and neither removes the other's pages")
    func jobsSharingAStateFolder() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "photos/aitzgorri.jpg"], to: "in")
        func job(_ name: String) throws -> String {
            try workspace.writeJob("""
                {"version": 1, "name": "\(name)", "sources": [{"path": "in", "include": ["*"]}],
                 "outputs": [{"name": "t", "path": "out-\(name)/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}],
                              "format": {"type": "jpeg"}}],
                 "state": "state/\(name).sqlite"}
                """, name: "\(name).json")
        }
        let (nightly, weekly) = (try job("nightly"), try job("weekly"))
        #expect(try workspace.run([nightly]).status == 0)
        #expect(try workspace.run([weekly]).status == 0)
        // Three pages for the nightly job, then the weekly job's report of one page.
        let first = try workspace.run(["report", nightly, "--per-page", "1"])
        #expect(first.stdout == workspace.path("state/nightly-report.html") + "\n", "\(first.stderr)")
        let second = try workspace.run(["report", weekly])
        #expect(second.stdout == workspace.path("state/weekly-report.html") + "\n", "\(second.stderr)")
        #expect(workspace.files(in: "state").filter { $0.hasSuffix(".html") }
            == ["nightly-report-2.html", "nightly-report-3.html", "nightly-report.html", "weekly-report.html"])
        for (name, page) in [("nightly", "nightly-report.html"), ("nightly", "nightly-report-3.html"), ("weekly", "weekly-report.html")] {
            let html = try String(contentsOfFile: workspace.path("state/" + page), encoding: .utf8)
            #expect(html.contains("<h1>\(name)</h1>"), "\(page) is the \(name) job's")
        }
    }

    @Test("the report's times say their offset from UTC, in the zone of the machine that wrote it")
    func timesHaveAZone() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        #expect(try workspace.run([job, "--quiet"]).status == 0)
        for (zone, offset) in [("Asia/Kolkata", "+05:30"), ("UTC", "+00:00")] {
            #expect(try workspace.run(["report", job], environment: ["TZ": zone]).status == 0)
            let html = try String(contentsOfFile: workspace.path("state-report.html"), encoding: .utf8)
            let shown = try captures("<time datetime=\"[^\"]+\" title=\"[^\"]*\">([^<]+)</time>", in: html).map { $0[0] }
            // 2026-11-25 19:20:05 +05:30
            #expect(!shown.isEmpty && shown.allSatisfy { $0.count == 26 && $0.hasSuffix(" " + offset) }, "\(zone): \(shown)")
        }
    }

    @Test("a job that has never run: says so, exit 0, and creates no database")
    func neverRun() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        let result = try workspace.run(["report", job])
        #expect(result.status == 0)
        #expect(result.stdout == "simple has not run yet: no report written\n")
        #expect(workspace.files(in: ".") == ["in/friends.jpg", "job.json"], "no database, no report")
    }

    @Test("the contact sheet goes on over linked pages anywhere --out says, a smaller report removes the extra pages, a big job is sampled")
    func pagesAndSample() throws {
        try requireChromium()
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "photos/aitzgorri.jpg",
                                    "photos/picos-de-europa.jpg", "broken/truncated.jpg"], to: "in")
        let job = try simpleJob(workspace)
        #expect(try workspace.run([job]).status == 1)

        let paged = try workspace.run(["report", job, "--per-page", "2", "--out", "pages/index.html"])
        #expect(paged.stdout == workspace.path("pages/index.html") + "\n", "\(paged.stderr)")
        #expect(workspace.files(in: "pages").filter { $0.hasSuffix(".html") } == ["index-2.html", "index-3.html", "index.html"])
        let second = try String(contentsOfFile: workspace.path("pages/index-2.html"), encoding: .utf8)
        #expect(second.contains("<a rel=\"prev\" href=\"index.html\">") && second.contains("<a rel=\"next\" href=\"index-3.html\">"))
        #expect(!second.contains("id=\"runs\""), "the runs and failures are on the first page only")
        // Outputs are found from the report's own folder.
        let dom = try Chromium.dom(of: workspace.path("pages/index-2.html"))
        #expect(count("<figure class=\"tile", in: dom) == 2)
        #expect(dom.contains("data-images-loaded=\"2/2\""))
        #expect(dom.contains("href=\"../out/") && dom.contains("src=\"index-previews/"))

        #expect(try workspace.run(["report", job, "--out", "pages/index.html"]).status == 0)
        #expect(workspace.files(in: "pages").filter { $0.hasSuffix(".html") } == ["index.html"], "pages of the longer report are gone")

        let sampled = try workspace.run(["report", job, "--pages", "1", "--per-page", "2"])
        #expect(sampled.stdout == workspace.path("state-report.html") + "\n")
        let page = try String(contentsOfFile: try #require(sampled.stdout.split(separator: "\n").first.map(String.init)), encoding: .utf8)
        #expect(page.contains("A sample of 2: every 3rd of 5 items, failed first, then newest first."))
        #expect(try captures("<figure class=\"tile([^\"]*)\"", in: page).map { $0[0] } == [" failed", ""])
        #expect(try workspace.run(["report", job, "--per-page", "501"]).status == 64)
    }

    @Test("1,000,000 items: 20 pages of at most 500 images, a sample of the whole job, and page 1 loads in the browser")
    func millionItems() throws {
        try requireChromium()
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "broken/truncated.jpg"], to: "in")
        let job = try simpleJob(workspace)
        #expect(try workspace.run([job]).status == 1)
        // A million more items, every 1000th failed, all pointing at the real outputs.
        let database = try DatabaseQueue(path: workspace.path("state.sqlite"))
        try database.write { db in
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
                INSERT INTO item (key, source_key, output_name, state, fingerprint, output_path, error_kind, error_message, updated_at)
                SELECT '/big/' || i || '.jpg@t', '/big/' || i || '.jpg', 't', IIF(i % 1000 = 0, 'failed', 'done'), '',
                    ?1 || IIF(i % 2 = 0, 'friends.jpg', 'fig-bowl.jpg'), IIF(i % 1000 = 0, 'decode', NULL),
                    IIF(i % 1000 = 0, 'VipsJpeg: Premature end of input file', NULL), 1700000000 + i
                FROM n
                """, arguments: [workspace.path("out/")])
        }
        try database.close()

        let started = Date()
        let result = try workspace.run(["report", job])
        print("report of 1,000,003 items written in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        #expect(result.status == 0, "\(result.stderr)")
        let pages = workspace.files(in: ".").filter { $0.hasSuffix(".html") }
        #expect(pages.count == 20)
        for name in pages {
            let text = try String(contentsOfFile: workspace.path(name), encoding: .utf8)
            #expect(count("<figure class=\"tile", in: text) == (name == "state-report-20.html" ? 402 : 500), "\(name)")
            #expect(text.utf8.count < 400_000, "\(name): \(text.utf8.count) bytes")
        }
        let first = try String(contentsOfFile: workspace.path("state-report.html"), encoding: .utf8)
        #expect(try captures("<section id=\"outputs\"><h2>Outputs</h2><p class=\"muted\">(.*?)</p>", in: first)
            == [["A sample of 9,902: every 101st of 1,000,003 items, failed first, then newest first."]])
        #expect(first.contains("and 976 more: <code>runner failed"), "a long failure list is cut short and says where the rest is")
        let dom = try Chromium.dom(of: workspace.path("state-report.html"), budget: 5000)
        #expect(try captures("data-images-loaded=\"([^\"]*)\"", in: dom) == [["490/490"]])
    }
}
