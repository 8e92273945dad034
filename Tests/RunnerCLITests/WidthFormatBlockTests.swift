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

        // Without 240: its two outputs of each source are orphans, listed by prune and deleted with --delete.
        _ = try blockJob(workspace, widths: [120, 480], plain: true, copy: false)
        let replanned = try workspace.run(["plan", job])
        #expect(replanned.stdout.contains("0 to run") && replanned.stdout.contains("10 up to date")
                && replanned.stdout.contains("4 orphaned"), "\(replanned.stdout)")
        let listed = try workspace.run(["prune", job])
        #expect(listed.status == 0, "\(listed.stderr)")
        let deletions = listed.stdout.split(separator: "\n").filter { $0.hasPrefix("delete\t") }.map { $0.split(separator: "\t").last.map(String.init) ?? "" }
        #expect(Set(deletions) == Set(["fig-bowl-240.avif", "fig-bowl-240.webp", "friends-240.avif", "friends-240.webp"].map { workspace.path("site/img/" + $0) }),
                "\(listed.stdout)")
        #expect(try workspace.run(["prune", job, "--delete"]).status == 0)
        #expect(workspace.files(in: "site/img") == expected.filter { !$0.contains("-240.") }.sorted())
        let last = try workspace.run([job])
        #expect(last.stdout.contains("0 done, 0 failed, 10 up to date"), "\(last.stdout)")
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
