import Foundation
import Testing
import TestSupport

/// What `Job.parse` says about `text`: its error, or "accepted".
func verdict(_ text: String) -> String {
    do {
        _ = try Job.parse(text: text, filePath: "/j/job.json")
        return "accepted"
    } catch {
        return "\(error)"
    }
}

/// A job with one output whose chain is `steps`, `format` and extra output keys.
private func job(chain steps: String = "", format: String = #"{"type": "jpeg"}"#, output extra: String = "", top: String = "") -> String {
    """
    {"version": 1, "sources": [{"path": "p"}]\(top),
     "outputs": [{"name": "t", "path": "o/{stem}", "chain": [\(steps)], "format": \(format)\(extra)}]}
    """
}

@Suite("Manifest: job files decode into fully defaulted values")
struct ManifestTests {
    let minimal = """
    {"version": 1, "sources": [{"path": "photos"}],
     "outputs": [{"name": "t", "path": "../out/{stem}.jpg", "chain": [{"op": "blur", "sigma": 1.50}], "format": {"type": "jpeg"}}]}
    """

    @Test("defaults are filled in and paths resolve against the job file's folder")
    func defaults() throws {
        let job = try Job.parse(text: minimal, filePath: "/srv/jobs/nightly.json")
        #expect(job.name == "nightly")
        #expect(job.statePath == "/srv/jobs/nightly.sqlite")
        #expect(job.concurrency.process == ProcessInfo.processInfo.activeProcessorCount)
        #expect(job.concurrency.threadsPerImage == 1)
        #expect(job.limits.maxPixels == 268_402_689)
        #expect(job.limits.failOn == .error)
        #expect(job.limits.blockUntrustedLoaders)
        #expect(job.sources == [.path("/srv/jobs/photos", recursive: false, include: Job.defaultImagePatterns, exclude: [])])
        #expect(job.outputs[0].template.root == "/srv/out")
        #expect(job.outputs[0].autorotate)
        #expect(job.outputs[0].encoder.identifier == "jpeg(quality:80,progressive:false,chromaSubsampling:auto,optimizeCoding:false)")
        #expect(job.outputs[0].metadata == .strip && job.outputs[0].colourSpace == .srgb && job.limits.frames == 300)
    }

    @Test("identifiers spell out every parameter in canonical form")
    func identifiers() throws {
        func chain(_ steps: String) throws -> String {
            try Job.parse(text: """
                {"version": 1, "sources": [{"path": "p"}],
                 "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [\(steps)], "format": {"type": "jpeg"}}]}
                """, filePath: "/j/job.json").outputs[0].chain.identifier
        }
        #expect(try chain(#"{"op": "blur", "sigma": 1.50}"#) == "blur(sigma:1.5)")
        #expect(try chain(#"{"op": "blur", "sigma": 2}"#) == (try chain(#"{"op": "blur", "sigma": 2.0}"#)))
        #expect(try chain(#"{"op": "blur", "sigma": 2}"#) != (try chain(#"{"op": "blur", "sigma": 3}"#)))
        #expect(try chain(#"{"op": "sharpen"}"#) == (try chain(#"{"op": "sharpen", "sigma": 0.5, "m1": 0, "m2": 3}"#)))
        #expect(try chain(#"{"op": "thumbnail", "width": 256, "height": 256}, {"op": "grayscale"}"#)
            == "thumbnail(width:256,height:256,fit:cover,position:centre,enlarge:false)|>grayscale()")
        #expect(try chain(#"{"op": "crop", "width": 10, "height": 20}"#) == "crop(width:10,height:20,gravity:centre)")
    }

    @Test("the recipe (and so the fingerprint) changes with chain, format or load options")
    func recipe() throws {
        func recipe(_ output: String) throws -> String {
            try Job.parse(text: #"{"version": 1, "sources": [{"path": "p"}], "outputs": [\#(output)]}"#,
                          filePath: "/j/job.json").outputs[0].recipe
        }
        let base = try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}"#)
        #expect(base != (try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg", "quality": 81}}"#)))
        #expect(base != (try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}, "autorotate": false}"#)))
        #expect(base == (try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg", "quality": 80}}"#)))
    }

    @Test("errors name the exact location", arguments: [
        (#"{"version": 1, "sources": [], "outputs": []}"#, "sources: must list at least one source"),
        (#"{"version": 1, "sources": [{"path": "a", "glob": "b"}], "outputs": []}"#, "sources[0]: must have exactly one of path, glob, list, url, s3"),
        (#"{"version": 1, "sources": [{"path": "a", "recursive": "yes"}], "outputs": []}"#, "sources[0].recursive: must be true or false, not a string"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "rotate", "angle": "45"}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].angle: must be a number, not a string"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "height": 10, "fit": "cover"}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].fit: cover needs both width and height; with only height, give \"fit\": \"inside\""),
        // The trial's first job: one side and no fit says which key to add.
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 320}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].fit: the default fit cover needs both width and height; with only width, give \"fit\": \"inside\""),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 10, "height": 10, "background": "red"}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].background: must be a colour as #rgb, #rrggbb or #rrggbbaa, not \"red\""),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}, {"name": "t", "path": "p/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}"#,
         "outputs[1].name: \"t\" is used by another output"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}], "concurrency": {"process": 0}}"#,
         "concurrency.process: must be between 1 and 256"),
    ])
    func errors(text: String, message: String) {
        #expect(throws: JobFileError.self) { try Job.parse(text: text, filePath: "/j/job.json") }
        do {
            _ = try Job.parse(text: text, filePath: "/j/job.json")
        } catch {
            #expect("\(error)" == message)
        }
    }

    @Test("colours parse in all three spellings")
    func colours() {
        #expect(Colour(hex: "#f00")?.canonical == "#ff0000ff")
        #expect(Colour(hex: "#00FF00")?.canonical == "#00ff00ff")
        #expect(Colour(hex: "#0000ff80")?.alpha == 128)
        #expect(Colour(hex: "#12") == nil)
        #expect(Colour(hex: "00ff00") == nil)
    }

    @Test("a JSON syntax error names its line and column and what was expected there", arguments: [
        ("{\"version\": 1,\n  \"sources\": [{\"path\": \"a\"}]\n  \"outputs\": []}", "3:3: expected ',' or '}'"),
        (#"{"version": 1, "sources": [{"path": "a"},]}"#, "1:42: expected a value"),
        ("{version: 1}", "1:2: expected a key in double quotes or '}'"),
        (#"{"version": 1, "name": thumbs}"#, "1:24: expected a value (text is written in double quotes)"),
        ("{\"version\": 1,\n \"name\": \"été\", \"x\" 1}", "2:21: expected ':'"),
        ("{\"name\": \"a\n\"}", "1:12: expected '\"' to end the string before the end of the line"),
        (#"{"version": 01}"#, "1:14: a number must not start with 0"),
        (#"{"version": 1e999}"#, "1:13: number out of range"),
        (#"{"name": "\q"}"#, "1:12: unknown escape '\\q'"),
        ("{\"version\": 1", "1:14: expected ',' or '}' before the end of the file"),
        (#"{"version": 1} {}"#, "1:16: expected the end of the file after the JSON value"),
        ("", "1:1: expected a value before the end of the file"),
    ])
    func syntaxErrors(text: String, message: String) {
        #expect(verdict(text) == message)
    }

    @Test("a key path is found in the text: keys holding . or [, elements, a missing key's object, a member, a byte order mark")
    func keyPathPositions() {
        let text = "\u{FEFF}{\"a.b\": {\"c\": [10,\n  {\"d[0]\": true, \"e\": {}}]},\n \"a\": {\"b\": 2}}"
        func at(_ path: String, member: String? = nil) -> String {
            JSONValue.position(of: path, member: member, in: text).map { "\($0.line):\($0.column)" } ?? "none"
        }
        #expect(at("a.b") == "1:9")
        #expect(at("a.b.c[1]") == "2:3")
        #expect(at("a.b.c[1].d[0]") == "2:12")
        #expect(at("a.b.c[1].e.f") == "2:23", "a missing key: its object")
        #expect(at("a.b.c[7]") == "1:15", "a missing element: its array")
        #expect(at("a.b.c[1]", member: "e") == "2:18")
        #expect(at("a") == "3:7")
        #expect(at("", member: "a") == "3:2")
        #expect(JSONValue.position(of: "a[3]", in: "{\"a\": [1, ") == nil, "text that breaks off before the place")
    }

    @Test("strings, escapes and numbers parse as JSON says")
    func jsonValues() throws {
        let parsed = try Job.parse(text: "\u{FEFF}" + job(chain: #"{"op": "blur", "sigma": 25e-1}"#, top: #", "name": "a\"\\\/\u00e9\ud83d\ude00\n\tb""#),
                                   filePath: "/j/job.json")
        #expect(parsed.name == "a\"\\/é😀\n\tb")
        #expect(parsed.outputs[0].chain.identifier == "blur(sigma:2.5)")
        #expect(verdict(job(chain: #"{"op": "rotate", "angle": -0.0E+0}"#)) == "accepted")
        #expect(verdict(job(top: #", "name": "\ud83d""#)) == "1:59: expected a low surrogate \\uDC00-\\uDFFF")
    }

    @Test("an unknown key is reported before any other rule of its object, with the nearest known key", arguments: [
        (job(chain: #"{"op": "thumbnail", "widht": 100}"#), #"outputs[0].chain[0]: unknown key "widht" (did you mean "width"?)"#),
        (job(chain: #"{"op": "resize", "Height": 100}"#), #"outputs[0].chain[0]: unknown key "Height" (did you mean "height"?)"#),
        (job(chain: #"{"op": "blur", "sigm": 2}"#), #"outputs[0].chain[0]: unknown key "sigm" (did you mean "sigma"?)"#),
        (job(chain: #"{"op": "blur", "sigma": -1, "radius": 2}"#), #"outputs[0].chain[0]: unknown key "radius" (known: op, sigma)"#),
        (job(chain: #"{"opp": "blur", "sigma": 2}"#), #"outputs[0].chain[0]: unknown key "opp" (did you mean "op"?)"#),
        (job(chain: #"{"op": "blurr", "sigma": 2}"#), #"outputs[0].chain[0].op: unknown op "blurr" (did you mean "blur"?)"#),
        (job(format: #"{"type": "jpeg", "qualty": 101}"#), #"outputs[0].format: unknown key "qualty" (did you mean "quality"?)"#),
        (job(format: #"{"tpye": "webp"}"#), #"outputs[0].format: unknown key "tpye" (did you mean "type"?)"#),
        (job(format: #"{"type": "jpg"}"#), #"outputs[0].format.type: unknown format "jpg" (did you mean "jpeg"?)"#),
        (job(format: #"{"type": "auto", "jpeg": {"quallity": 0}}"#), #"outputs[0].format.jpeg: unknown key "quallity" (did you mean "quality"?)"#),
        (job(output: #", "chian": []"#), #"outputs[0]: unknown key "chian" (did you mean "chain"?)"#),
        (job(top: #", "concurency": {}"#), #"unknown key "concurency" (did you mean "concurrency"?)"#),
        (job(top: #", "limits": {"maxpixels": 0}"#), #"limits: unknown key "maxpixels" (did you mean "maxPixels"?)"#),
        (job(top: #", "http": {"timout": 0}"#), #"http: unknown key "timout" (did you mean "timeout"?)"#),
        (#"{"version": 1, "sources": [{"paht": "p", "recursive": 1}], "outputs": []}"#, #"sources[0]: unknown key "paht" (did you mean "path"?)"#),
        (#"{"version": 1, "sources": [{"glob": "p/*.jpg", "recursive": true}], "outputs": []}"#,
         "sources[0].recursive: does not apply here (this object uses: glob)"),
        (job(chain: #"{"op": "rotate", "angle": 90}, {"op": "crop", "width": 5, "height": 5}, {"op": "blur", "sigma": -1}"#),
         "outputs[0].chain[2].sigma: must be > 0"),
    ])
    func unknownKeysFirst(text: String, message: String) {
        #expect(verdict(text) == message)
    }

    @Test("an output path whose extension names another format than format.type is an error naming both")
    func extensionNamesFormat() {
        func with(_ path: String, _ type: String) -> String {
            verdict(#"{"version": 1, "sources": [{"path": "p"}], "outputs": [{"name": "t", "path": "\#(path)", "chain": [], "format": {"type": "\#(type)"}}]}"#)
        }
        #expect(with("o/{stem}.webp", "jpeg") == #"outputs[0].path: the extension ".webp" names another format (webp) than format.type "jpeg": "#
            + #"name the file .jpg, .jpeg, .jpe or .jfif, or make "type" "webp""#)
        #expect(with("o/{stem}.JPG", "png") == #"outputs[0].path: the extension ".JPG" names another format (jpeg) than format.type "png": "#
            + #"name the file .png, or make "type" "jpeg""#)
        // runner writes JPEG XL, so `.jxl` names a format a "type" can be made.
        #expect(with("o/{stem}.jxl", "webp") == #"outputs[0].path: the extension ".jxl" names another format (jxl) than format.type "webp": "#
            + #"name the file .webp, or make "type" "jxl""#)
        #expect(with("o/{stem}.heic", "avif").hasPrefix(#"outputs[0].path: the extension ".heic" names another format (heic) than format.type "avif": name the file .avif"#))
        #expect(with("o/x.tif/{stem}.gif.png", "jpeg").contains(#"".png" names another format (png)"#))
        // Matching (any case), no extension, one no image format has, the source's own ({ext}, checked per item), and auto.
        for (path, type) in [("o/{stem}.JPEG", "jpeg"), ("o/{stem}.tif", "tiff"), ("o/{stem}", "webp"), ("o/{stem}.v2.bin", "png"),
                             ("o.webp/{stem}", "jpeg"), ("o/{stem}.{ext}", "jpeg"), ("o/{stem}.webp", "auto"), ("o/{stem}.heif", "avif"),
                             ("o/{stem}.JXL", "jxl")] {
            #expect(with(path, type) == "accepted", "\(path) with \(type)")
        }
    }

    @Test("an error quotes a long value by its start and its length, wherever the value is")
    func longValuesQuotedShort() {
        let long = String(repeating: "x", count: 100_000)
        let quoted = #""\#(String(repeating: "x", count: 59))…" (100000 characters)"#
        #expect(verdict(job(format: #"{"type": "\#(long)"}"#)) == "outputs[0].format.type: unknown format \(quoted) (known: auto, avif, gif, jpeg, jxl, png, tiff, webp)")
        #expect(verdict(job(chain: #"{"op": "thumbnail", "width": 5, "height": 5, "fit": "\#(long)"}"#))
            == "outputs[0].chain[0].fit: must be one of cover, contain, fill, inside, outside, not \(quoted)")
        #expect(verdict(job(chain: #"{"op": "tint", "colour": "\#(long)"}"#)).hasSuffix("not \(quoted)"))
        #expect(verdict(job(chain: #"{"op": "\#(long)"}"#)).hasPrefix("outputs[0].chain[0].op: unknown op \(quoted) (known: "))
        #expect(verdict(job(output: #", "\#(long)": 1"#)).hasPrefix("outputs[0]: unknown key \(quoted) (known: "))
        // Short ones stay whole, with the nearest name.
        #expect(verdict(job(format: #"{"type": "jpgg"}"#)) == #"outputs[0].format.type: unknown format "jpgg" (did you mean "jpeg"?)"#)
    }

    @Test("color and colour are one key: same identifier, errors in the job's own spelling")
    func colorSpelling() throws {
        func identifier(_ text: String) throws -> String {
            let output = try Job.parse(text: text, filePath: "/j/job.json").outputs[0]
            return output.chain.identifier + " " + output.encoder.identifier + " \(output.colourSpace)"
        }
        let pairs = [
            (##"{"op": "tint", "colour": "#ff000080"}"##, ##"{"op": "tint", "color": "#ff000080"}"##),
            (##"{"op": "overlay", "colour": "#00f", "opacity": 0.25}"##, ##"{"op": "overlay", "color": "#0000ff", "opacity": 0.25}"##),
            (##"{"op": "border", "width": 3, "colour": "#fff"}"##, ##"{"op": "border", "width": 3, "color": "#fff"}"##),
        ]
        for (british, american) in pairs {
            #expect(try identifier(job(chain: british)) == identifier(job(chain: american)))
            #expect(try identifier(job(chain: american)).contains("colour:"))
        }
        #expect(try identifier(job(format: #"{"type": "png", "palette": true, "colors": 16}"#))
            == identifier(job(format: #"{"type": "png", "palette": true, "colours": 16}"#)))
        #expect(try identifier(job(output: #", "colourspace": "keep""#)) == identifier(job(output: #", "colorspace": "keep""#)))
        #expect(verdict(job(chain: #"{"op": "tint", "color": "red"}"#))
            == #"outputs[0].chain[0].color: must be a colour as #rgb, #rrggbb or #rrggbbaa, not "red""#)
        #expect(verdict(job(chain: ##"{"op": "tint", "colour": "#f00", "color": "#f00"}"##))
            == #"outputs[0].chain[0].colour: is the same key as "color"; give it once"#)
        #expect(verdict(job(chain: ##"{"op": "tint", "colur": "#f00"}"##))
            == #"outputs[0].chain[0]: unknown key "colur" (did you mean "colour"?)"#)
    }
}
