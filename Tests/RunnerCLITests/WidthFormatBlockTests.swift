import Foundation
import Testing
import TestSupport

/// A block of three widths and two formats (docs/JOB-FILE.md, Width and format blocks), over two
/// photos wider than its widest width (fig-bowl 960x649, friends 533x800) and, with `broken`, a
/// truncated JPEG whose items fail.
/// `copy` false rewrites the job file only, over the sources already copied.
private func blockJob(_ workspace: Workspace, widths: [Int] = [120, 240, 480], broken: Bool = false, plain: Bool = false,
                      copy: Bool = true) throws -> String {
    if copy { try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"] + (broken ? ["broken/truncated.jpg"] : []), to: "in") }
    // The same as the block's 240 WebP, written as an output of its own.
    let plainOutput = #"""
        , {"name": "plain", "path": "site/plain/{stem}.webp",
           "chain": [{"op": "thumbnail", "width": 240, "fit": "inside"}], "format": {"type": "webp", "quality": 70}}
        """#
    return try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "hero", "path": "site/img/{stem}-{width}.{format}", "widths": \(widths),
                      "formats": ["avif", {"type": "webp", "quality": 70}], "chain": []}\(plain ? plainOutput : "")],
         "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
        """)
}

private let photos = ["fig-bowl": (960, 649), "friends": (533, 800)]

@Suite("Width and format blocks: widths × formats in one output", .serialized)
struct WidthFormatBlockTests {
    @Test("3 widths × 2 formats: 6 files a source at their widths and types, named NAME-W-TYPE; a rerun is up to date; a width removed is pruned")
    func expandsRunsAndPrunes() throws {
        let workspace = try Workspace()
        let job = try blockJob(workspace, plain: true)
        let validated = try workspace.run(["validate", job])
        #expect(validated.status == 0, "\(validated.stderr)")
        let names = ["hero-120-avif", "hero-120-webp", "hero-240-avif", "hero-240-webp", "hero-480-avif", "hero-480-webp"]
        #expect(validated.stdout.contains("7 outputs: " + (names + ["plain"]).joined(separator: ", ") + "; 14 items"), "\(validated.stdout)")
        let planned = try workspace.run(["plan", job])
        #expect(planned.stdout.contains("14 to run"), "\(planned.stdout)")

        let run = try workspace.run([job])
        #expect(run.status == 0, "\(run.stderr)")
        var expected: [String] = []
        for (stem, (width, height)) in photos {
            for target in [120, 240, 480] {
                for (ext, loader) in [("avif", "heifload"), ("webp", "webpload")] {
                    let file = "\(stem)-\(target).\(ext)"
                    expected.append(file)
                    let probe = try #require(ImageProbe.open(workspace.path("site/img/" + file)), "\(file)")
                    #expect(probe.loader == loader, "\(file): \(probe.loader)")
                    // Fits inside the width, aspect kept (libvips rounds the other side).
                    let side = Double(target) * Double(height) / Double(width)
                    #expect(probe.width == target && abs(Double(probe.height) - side) <= 1, "\(file): \(probe.width)x\(probe.height)")
                }
            }
            // The width enters as a thumbnail fitting inside it: the same image as that output written alone.
            let difference = try #require(ImageProbe.meanAbsoluteDifference(workspace.path("site/img/\(stem)-240.webp"),
                                                                            workspace.path("site/plain/\(stem).webp")))
            #expect(difference < 1, "\(stem): \(difference)")
        }
        #expect(workspace.files(in: "site/img") == expected.sorted())

        let again = try workspace.run([job])
        #expect(again.status == 0 && again.stdout.contains("0 done, 0 failed, 14 up to date"), "\(again.stdout)\(again.stderr)")

        // Without 240: its two outputs of each source are orphans, listed by prune and deleted with --delete;
        // 480's next narrower width is now 120, which decides whether it is made (BlockWidthsAboveTheSourceTests): redone.
        _ = try blockJob(workspace, widths: [120, 480], plain: true, copy: false)
        let replanned = try workspace.run(["plan", job])
        #expect(replanned.stdout.contains("4 to run") && replanned.stdout.contains("6 up to date")
                && replanned.stdout.contains("4 orphaned"), "\(replanned.stdout)")
        let listed = try workspace.run(["prune", job])
        #expect(listed.status == 0, "\(listed.stderr)")
        let deletions = listed.stdout.split(separator: "\n").filter { $0.hasPrefix("delete\t") }.map { $0.split(separator: "\t").last.map(String.init) ?? "" }
        #expect(Set(deletions) == Set(["fig-bowl-240.avif", "fig-bowl-240.webp", "friends-240.avif", "friends-240.webp"].map { workspace.path("site/img/" + $0) }),
                "\(listed.stdout)")
        // The manifest a site was built from names them: kept for keepReplaced after the manifest drops them.
        let retired = try workspace.run(["prune", job, "--delete"])
        #expect(retired.status == 0 && retired.stdout.contains("4 orphaned items dropped, 4 files retired"), "\(retired.stdout)")
        #expect(workspace.files(in: "site/img") == expected.sorted())
        #expect(try !String(contentsOfFile: workspace.path("site/images.json"), encoding: .utf8).contains("-240."))
        let last = try workspace.run([job])
        #expect(last.stdout.contains("4 done, 0 failed, 6 up to date"), "\(last.stdout)")
    }

    @Test("job-file errors name the exact key: widths, formats, format with formats, the tokens a block's path needs")
    func errorsNameTheKey() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let cases: [(String, String, String)] = [
            (#""widths": [400, 0, 800], "formats": ["avif"]"#, "o/{stem}-{width}.avif", "outputs[0].widths[1]: must be a positive integer"),
            (#""widths": [400, 800, 400], "formats": ["avif"]"#, "o/{stem}-{width}.avif",
             "outputs[0].widths[2]: 400 is given twice (also widths[0]): each width once"),
            (#""widths": [], "formats": ["avif"]"#, "o/{stem}.avif", "outputs[0].widths: must list at least one width"),
            (#""widths": [400, 800, 1600], "formats": ["avif"]"#, "o/{stem}.avif",
             "outputs[0].path: must contain {width}: the block makes 3 widths"),
            (#""widths": [400], "formats": ["avif", "webp"]"#, "o/{stem}-{width}.avif", "outputs[0].path: must contain {format}: the block makes 2 formats"),
            (#""formats": ["avif", "wbep"]"#, "o/{stem}.{format}", #"outputs[0].formats[1]: unknown format "wbep" (did you mean "webp"?)"#),
            (#""formats": ["webp", {"type": "webp", "quality": 50}]"#, "o/{stem}-{name}.{format}",
             #"outputs[0].formats[1]: type "webp" is given twice (also formats[0])"#),
            (#""formats": ["avif", {"type": "webp", "quality": 500}]"#, "o/{stem}.{format}", "outputs[0].formats[1].quality: must be between 1 and 100"),
            (#""formats": [7]"#, "o/{stem}.{format}", "outputs[0].formats[0]: must be a format object or a type, not a number"),
            (#""formats": ["avif"], "format": {"type": "webp"}"#, "o/{stem}.{format}", "outputs[0]: must have exactly one of format, formats"),
            (#""format": {"type": "webp"}"#, "o/{stem}-{width}.webp", "outputs[0].path: {width} is the width of a block: give widths"),
            (#""formats": ["auto"]"#, "o/{stem}.{format}", "outputs[0].path: {format} is a format's usual extension, which auto has none of"),
            (#""widths": [400, 800], "formats": ["avif", "webp"]"#, "o/{stem}-{width}-{format}.webp",
             #"outputs[0].path: with formats[0]: the extension ".webp" names another format (webp) than format.type "avif""#),
        ]
        for (keys, path, message) in cases {
            let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "in"}], "outputs": [{"name": "hero", "path": "\#(path)", "chain": [], \#(keys)}]}"#)
            let result = try workspace.run(["validate", job])
            #expect(result.status == 2 && result.stderr.contains(message), "\(keys): \(result.stderr)")
        }
        // A name a block makes is a name like any other.
        let taken = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "hero-400", "path": "a/{stem}.webp", "chain": [], "format": {"type": "webp"}},
                         {"name": "hero", "path": "b/{stem}-{width}.webp", "chain": [], "widths": [400], "format": {"type": "webp"}}]}
            """)
        let result = try workspace.run(["validate", taken])
        #expect(result.status == 2 && result.stderr.contains(#"outputs[1].name: "hero-400", which this block makes, is used by another output"#),
                "\(result.stderr)")
        // {name} tells the block's outputs apart, and with widths and one format the names have no type.
        let named = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "hero", "path": "b/{stem}-{name}.webp", "chain": [], "widths": [400, 800], "format": {"type": "webp"}}]}
            """)
        let valid = try workspace.run(["validate", named])
        #expect(valid.status == 0 && valid.stdout.contains("2 outputs: hero-400, hero-800;"), "\(valid.stdout)\(valid.stderr)")
    }

    @Test("a page built from the manifest's sets (a <picture> loop) in headless Chromium: every srcset file loads at its width, the first type is picked")
    func pageFromSets() throws {
        if let reason = Chromium.unavailable { try Test.cancel("skipped: \(reason)") }
        let workspace = try Workspace()
        let job = try blockJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: workspace.path("site/images.json")))
        let manifest = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let sources = try #require(manifest["sources"] as? [[String: Any]])
        // What a site's build writes: one <picture> per source and block, a <source> per format, a srcset candidate per image.
        var pictures = ""
        var candidates = 0
        for source in sources {
            for (_, formats) in try #require(source["sets"] as? [String: [[String: Any]]]) {
                pictures += "<picture>"
                for format in formats {
                    let images = try #require(format["images"] as? [[String: Any]])
                    candidates += images.count
                    let srcset = images.map { "\($0["path"] as? String ?? "") \($0["width"] as? Int ?? 0)w" }.joined(separator: ", ")
                    pictures += "<source type=\"\(format["type"] as? String ?? "")\" srcset=\"\(srcset)\" sizes=\"300px\">"
                }
                let fallback = try #require((formats.last?["images"] as? [[String: Any]])?.last?["path"] as? String)
                pictures += "<img src=\"\(fallback)\" alt=\"\"></picture>\n"
            }
        }
        #expect(candidates == 12)
        // Each candidate loaded on its own (a <picture> shows one): its natural width must be the one its srcset says.
        let page = """
            <!doctype html><html><body data-loaded="0/0" data-bad="">
            \(pictures)
            <script>
            const wanted = [];
            document.querySelectorAll('source').forEach(s => s.srcset.split(', ').forEach(c => {
              const [url, w] = c.split(' '); wanted.push([url, parseInt(w)]); }));
            let loaded = 0, bad = [];
            const report = () => { document.body.dataset.loaded = loaded + '/' + wanted.length; document.body.dataset.bad = bad.join(' ');
              document.body.dataset.picked = [...document.querySelectorAll('picture img')]
                .map(i => i.complete && i.naturalWidth > 0 ? i.currentSrc.split('.').pop() : 'broken').join(' '); };
            wanted.forEach(([url, w]) => { const i = new Image();
              i.onload = () => { if (i.naturalWidth === w) loaded++; else bad.push(url + ':' + i.naturalWidth); report(); };
              i.onerror = () => { bad.push(url); report(); }; i.src = url; });
            window.addEventListener('load', report);
            </script></body></html>
            """
        try workspace.write(page, to: "site/index.html")
        let dom = try Chromium.dom(of: workspace.path("site/index.html"), budget: 5000)
        #expect(dom.contains("data-loaded=\"12/12\""), "\(dom.prefix(600))")
        #expect(dom.contains("data-bad=\"\""), "\(dom.prefix(600))")
        // AVIF is listed first, and Chromium shows AVIF: each <source type> is right.
        #expect(dom.contains("data-picked=\"avif avif\""), "\(dom.prefix(600))")
    }
}

extension SiteManifestTests {
    @Test("sets: a block's done outputs per source, by block name, its formats in the job's order with media types, images by width; valid against the schema")
    func setsOfABlock() throws {
        let workspace = try Workspace()
        let job = try blockJob(workspace, broken: true)
        #expect(try workspace.run([job]).status == 1, "the truncated JPEG fails")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let listed = sources(try document(workspace, "site/images.json"))
        #expect(listed.count == 3)
        for source in listed where (source["key"] as? String)?.hasSuffix("truncated.jpg") == false {
            let outputs = try #require(source["outputs"] as? [[String: Any]])
            #expect(outputs.count == 6, "every output is still listed in outputs")
            let sets = try #require(source["sets"] as? [String: [[String: Any]]])
            #expect(Array(sets.keys) == ["hero"])
            let formats = try #require(sets["hero"])
            #expect(formats.map { $0["format"] as? String } == ["avif", "webp"], "the block's order")
            #expect(formats.map { $0["type"] as? String } == ["image/avif", "image/webp"])
            for format in formats {
                let images = try #require(format["images"] as? [[String: Any]])
                #expect(images.map { $0["width"] as? Int } == [120, 240, 480], "by width")
                for image in images {
                    // The same file and facts as its entry in outputs.
                    let output = try #require(outputs.first { $0["path"] as? String == image["path"] as? String })
                    #expect(output["name"] as? String == "hero-\(image["width"] as? Int ?? 0)-\(format["format"] as? String ?? "")")
                    for key in ["width", "height", "bytes", "hash"] { #expect(output[key] as? NSObject == image[key] as? NSObject, "\(key)") }
                }
            }
        }
        #expect(listed.first { ($0["key"] as? String)?.hasSuffix("truncated.jpg") == true }?["sets"] == nil, "nothing done, no sets")

        // A width taken out of the block leaves sets at once; its files stay in outputs until pruned.
        _ = try blockJob(workspace, widths: [120, 480], broken: true, copy: false)
        #expect(try workspace.run(["manifest", job]).status == 0)
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let after = sources(try document(workspace, "site/images.json")).filter { $0["sets"] != nil }
        #expect(after.count == 2)
        for source in after {
            #expect((source["outputs"] as? [[String: Any]])?.count == 6)
            let formats = (source["sets"] as? [String: [[String: Any]]])?["hero"] ?? []
            #expect(formats.map { ($0["images"] as? [[String: Any]])?.map { $0["width"] as? Int } } == [[120, 480], [120, 480]])
        }
        // JSON Lines: every line a $defs/source with its sets.
        let jsonl = try workspace.run(["manifest", job, "--jsonl", "--out", "site/images.jsonl"])
        #expect(jsonl.status == 0, "\(jsonl.stderr)")
        #expect(try check(workspace, ["site/images.jsonl"]) == "ok")
    }
}

/// Issue 32, point 7: eleventy-img's rule. A block's width above the source's is not made when a
/// narrower width already makes the source at its own width (the bytes would be the same).
@Suite("Width blocks make no duplicate bytes above the source's width", .serialized)
struct BlockWidthsAboveTheSourceTests {
    /// `name` made from a real photo at exactly `width` x `height` (fig-bowl is 960x649).
    private func photo(_ workspace: Workspace, _ name: String, _ width: Int, _ height: Int) throws {
        try VipsCLI.run("vips", ["thumbnail", Fixtures.path("photos/fig-bowl.jpg"), workspace.path("in/" + name), "\(width)",
                                 "--height", "\(height)", "--size", "force"])
    }

    private func writeJob(_ workspace: Workspace, widths: [Int]) throws -> String {
        try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "hero", "path": "site/img/{stem}-{width}.{format}", "widths": \(widths), "formats": ["webp", "jpeg"], "chain": []}],
             "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
            """)
    }

    /// Each source's outputs in the manifest by name: state, width, reason; and its sets' widths per format.
    private func manifest(_ workspace: Workspace) throws -> [String: (outputs: [String: [String: Any]], sets: [String: [Int]])] {
        let data = try Data(contentsOf: URL(fileURLWithPath: workspace.path("site/images.json")))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var sources: [String: (outputs: [String: [String: Any]], sets: [String: [Int]])] = [:]
        for source in try #require(document["sources"] as? [[String: Any]]) {
            let stem = try #require((source["key"] as? String).map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent })
            let outputs = try #require(source["outputs"] as? [[String: Any]])
            let formats = (source["sets"] as? [String: [[String: Any]]])?["hero"] ?? []
            sources[stem] = (Dictionary(uniqueKeysWithValues: outputs.map { ($0["name"] as? String ?? "", $0) }),
                             Dictionary(uniqueKeysWithValues: formats.map { format in
                                 (format["format"] as? String ?? "", (format["images"] as? [[String: Any]] ?? []).map { $0["width"] as? Int ?? 0 })
                             }))
        }
        return sources
    }

    @Test("800, 1000 and 2000 px sources and a turned one through widths 400/800/1600: what is made, skipped, listed, rerun and redone")
    func skipsWidthsAboveTheSource() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        try photo(workspace, "small.png", 800, 600)
        try photo(workspace, "mid.jpg", 1000, 750)
        try photo(workspace, "big.jpg", 2000, 1500)
        // Stored 600 wide, shown 400 wide: the width that counts is the one the outputs show.
        try photo(workspace, "turned.jpg", 600, 400)
        try ExifTool.write(["-Orientation#=6"], into: workspace.path("in/turned.jpg"))

        // Without 800, small's 1600 makes it at its own 800: nothing is skipped yet.
        var job = try writeJob(workspace, widths: [400, 1600])
        var run = try workspace.run([job])
        // turned: 1600 holds what 400 does (shown 400 wide), so it is skipped in both formats; a skipped
        // item was handled, not left for the next run.
        #expect(run.status == 0 && run.stdout.contains("14 done, 0 failed, 0 up to date, 2 skipped (same bytes as a narrower output) in"),
                "\(run.stdout)\(run.stderr)")
        #expect(ImageProbe.open(workspace.path("site/img/small-1600.webp"))?.width == 800)

        // With 800: small's 1600 is the same bytes as its 800, so it is skipped; its file from before is
        // kept for keepReplaced (a site deployed from the last manifest names it) and no manifest names it.
        job = try writeJob(workspace, widths: [400, 800, 1600])
        run = try workspace.run([job])
        // The 800s are new and the 1600s' narrower widths changed: small's 1600 and turned's 800 and 1600 are skipped.
        #expect(run.status == 0 && run.stdout.contains("10 done, 0 failed, 8 up to date, 6 skipped (same bytes as a narrower output) in"), "\(run.stdout)\(run.stderr)")
        var made: [String] = []
        for (stem, widths) in [("small", [400, 800]), ("mid", [400, 800, 1600]), ("big", [400, 800, 1600]), ("turned", [400])] {
            for width in widths { made += ["\(stem)-\(width).webp", "\(stem)-\(width).jpg"] }
        }
        #expect(workspace.files(in: "site/img") == (made + ["small-1600.webp", "small-1600.jpg"]).sorted())
        let kept = try workspace.run(["prune", job])
        #expect(kept.stdout.contains("2 replaced files kept (0 past keepReplaced)")
                && kept.stdout.contains("keep\t\(workspace.path("in/small.png"))@hero-1600-webp\t\(workspace.path("site/img/small-1600.webp"))"), "\(kept.stdout)")
        // The original's own width is made once, under the first width above it.
        #expect(ImageProbe.open(workspace.path("site/img/mid-1600.webp"))?.width == 1000)
        #expect(ImageProbe.open(workspace.path("site/img/big-1600.jpg"))?.width == 1600)
        #expect(ImageProbe.open(workspace.path("site/img/turned-400.jpg")).map { [$0.width, $0.height] } == [400, 600])

        var listed = try manifest(workspace)
        let small = try #require(listed["small"])
        #expect(small.outputs["hero-1600-webp"]?["state"] as? String == "skipped")
        #expect(small.outputs["hero-1600-webp"]?["reason"] as? String == "same bytes as hero-800-webp: the source is 800 px wide")
        #expect(small.outputs["hero-1600-webp"]?["path"] == nil, "a skipped output has no file of its own")
        #expect(small.outputs["hero-1600-jpeg"]?["reason"] as? String == "same bytes as hero-800-jpeg: the source is 800 px wide")
        // srcset from the sets: each width once, the source's own the widest.
        #expect(small.sets == ["webp": [400, 800], "jpeg": [400, 800]])
        #expect(listed["mid"]?.sets == ["webp": [400, 800, 1000], "jpeg": [400, 800, 1000]])
        #expect(listed["turned"]?.sets == ["webp": [400], "jpeg": [400]])
        #expect(listed["turned"]?.outputs["hero-800-webp"]?["reason"] as? String == "same bytes as hero-400-webp: the source is 400 px wide")
        let status = try workspace.run(["status", job])
        #expect(status.stdout.contains("6 skipped"), "\(status.stdout)")

        // Nothing changed: every item is up to date, the skipped ones without a file.
        run = try workspace.run([job])
        #expect(run.status == 0 && run.stdout.contains("0 done, 0 failed, 24 up to date"), "\(run.stdout)\(run.stderr)")

        // small grows to 1200 px: its 1600 is made, at 1200.
        try photo(workspace, "small.png", 1200, 900)
        run = try workspace.run([job])
        #expect(run.status == 0 && run.stdout.contains("6 done") && run.stdout.contains("18 up to date"), "\(run.stdout)\(run.stderr)")
        #expect(ImageProbe.open(workspace.path("site/img/small-1600.webp"))?.width == 1200)
        listed = try manifest(workspace)
        #expect(listed["small"]?.sets == ["webp": [400, 800, 1200], "jpeg": [400, 800, 1200]])
        // Made again where the kept file was: it is no longer a replaced file.
        #expect(try workspace.run(["prune", job]).stdout.contains("0 orphaned items, 0 files to delete\n"))
    }
}
