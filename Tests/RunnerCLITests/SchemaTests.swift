import Foundation
import Testing
import TestSupport

/// Debian's python3-jsonschema (installed by `make deps`): checks the schema itself against draft
/// 2020-12, then prints one verdict line per document, `ok` or `invalid: MESSAGE at /PATH`: a file
/// is one document, a `.jsonl` file one a line.
private let validator = """
    import json, sys
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    for path in sys.argv[2:]:
        with open(path) as f:
            documents = [json.loads(line) for line in f] if path.endswith(".jsonl") else [json.load(f)]
        for document in documents:
            error = best_match(validator.iter_errors(document))
            print("ok" if error is None else "invalid: %s at /%s" % (error.message, "/".join(map(str, error.absolute_path))))
    """

private let repository = (Fixtures.root as NSString).deletingLastPathComponent

/// Writes `runner schema ARGUMENTS`'s output to `runner.schema.json` in `workspace` and returns
/// the validator's verdict on each document of `files`, in order.
func schemaVerdicts(_ workspace: Workspace, _ files: [String], schema arguments: [String] = []) throws -> [String] {
    let printed = try workspace.run(["schema"] + arguments)
    #expect(printed.status == 0, "\(printed.stderr)")
    try workspace.write(printed.stdout, to: "runner.schema.json")
    let result = try python(validator, [workspace.path("runner.schema.json")] + files)
    #expect(result.status == 0, "\(result.stderr)")
    let verdicts = result.stdout.split(separator: "\n").map(String.init)
    let documents = try files.map { $0.hasSuffix(".jsonl") ? try String(contentsOfFile: $0, encoding: .utf8).split(separator: "\n").count : 1 }
    #expect(verdicts.count == documents.reduce(0, +), "\(result.stdout)")
    return verdicts
}

/// The job-file reference's (docs/JOB-FILE.md) ```json blocks, in order.
private func readmeExamples() throws -> [String] {
    var blocks: [String] = []
    var block: [Substring]?
    for line in try String(contentsOfFile: repository + "/docs/JOB-FILE.md", encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
        if block == nil, line == "```json" {
            block = []
        } else if let lines = block, line == "```" {
            blocks.append(lines.joined(separator: "\n"))
            block = nil
        } else {
            block?.append(line)
        }
    }
    return blocks
}

/// A job over the fixture photos that both the schema and runner accept, with one part replaced.
private func job(version: String = "1", sources: String = #"{"path": "PHOTOS"}"#,
                 chain: String = #"{"op": "thumbnail", "width": 64, "height": 64}"#,
                 format: String = #"{"type": "jpeg"}"#, output: String = "", top: String = "") -> String {
    """
    {"$schema": "./runner.schema.json", "version": \(version), "sources": [\(sources)],
     "outputs": [{"name": "t", "path": "out/{stem}.img", "chain": [\(chain)], "format": \(format)\(output)}]\(top)}
    """
    .replacingOccurrences(of: "PHOTOS", with: Fixtures.path("photos"))
    .replacingOccurrences(of: "WATERMARK", with: Fixtures.path("watermark.png"))
}

@Suite("runner schema: a JSON Schema editors and validators agree with runner on")
struct SchemaTests {
    @Test("every job file in the repository and every JSON example in the job-file reference is valid against the schema and runner")
    func repositoryJobFiles() throws {
        let workspace = try Workspace()
        let jobs = try FileManager.default.contentsOfDirectory(atPath: repository + "/jobs")
            .filter { $0.hasSuffix(".json") && $0 != "runner.schema.json" }.sorted().map { repository + "/jobs/" + $0 }
        let fixtureJobs = (FileManager.default.enumerator(atPath: Fixtures.root)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".json") }.sorted().map(Fixtures.path)
        // The examples sit where the reference's paths expect them: in a jobs folder beside fixtures.
        try FileManager.default.createSymbolicLink(atPath: workspace.path("fixtures"), withDestinationPath: Fixtures.root)
        let examples = try readmeExamples()
        #expect(examples.count >= 2, "the job file example and the editor example")
        var files = jobs + fixtureJobs
        for (index, example) in examples.enumerated() {
            try workspace.write(example, to: "jobs/readme-\(index + 1).json")
            files.append(workspace.path("jobs/readme-\(index + 1).json"))
        }
        #expect(!jobs.isEmpty)
        for (file, verdict) in zip(files, try schemaVerdicts(workspace, files)) {
            #expect(verdict == "ok", "\(file): \(verdict)")
            let validated = try workspace.run(["validate", file])
            #expect(validated.status == 0, "\(file): \(validated.stderr)")
        }
    }

    @Test("a broken job file is refused by the schema and by runner validate (exit 2); valid variants pass both")
    func brokenJobFiles() throws {
        let broken = [
            ("unknown key", job(format: #"{"type": "jpeg", "qualty": 80}"#)),
            ("unknown top-level key", job(top: #", "concurency": {"process": 2}"#)),
            ("wrong type", job(chain: #"{"op": "thumbnail", "width": "big"}"#)),
            ("wrong type of section", job(top: #", "limits": []"#)),
            ("not an integer", job(chain: #"{"op": "roundCorners", "radius": 2.5}"#)),
            ("out of range", job(format: #"{"type": "jpeg", "quality": 101}"#)),
            ("out of range, below", job(top: #", "concurrency": {"process": 0}"#)),
            ("not one of the choices", job(chain: #"{"op": "resize", "width": 10, "kernel": "mitchell"}"#)),
            ("unknown op", job(chain: #"{"op": "blurr", "sigma": 1}"#)),
            ("missing required op parameter", job(chain: #"{"op": "blur"}"#)),
            ("missing required colour (either spelling)", job(chain: #"{"op": "tint"}"#)),
            ("missing op", job(chain: #"{"sigma": 1}"#)),
            ("missing version", job(version: "1").replacingOccurrences(of: #""version": 1, "#, with: "")),
            ("unsupported version", job(version: "2")),
            ("unknown format type", job(format: #"{"type": "bmp"}"#)),
            ("missing format type", job(format: #"{"quality": 80}"#)),
            ("option of another format", job(format: #"{"type": "png", "quality": 80}"#)),
            ("no sources", job(sources: "")),
            ("two source kinds", job(sources: #"{"path": "PHOTOS", "glob": "PHOTOS/*.jpg"}"#)),
            ("a key that applies only to another source kind", job(sources: #"{"glob": "PHOTOS/*.jpg", "recursive": true}"#)),
            ("neither width nor height", job(chain: #"{"op": "thumbnail", "fit": "inside"}"#)),
            ("colour given in both spellings", job(chain: ##"{"op": "tint", "colour": "#fff", "color": "#fff"}"##)),
            ("not a colour", job(chain: #"{"op": "tint", "colour": "red"}"#)),
            ("not a duration", job(top: #", "blacklist": {"ttl": "soon"}"#)),
            ("a mozjpeg option", job(format: #"{"type": "jpeg", "trellisQuant": true}"#)),
            ("unknown option under auto", job(format: #"{"type": "auto", "jpeg": {"quallity": 90}}"#)),
            ("an empty name", job(output: #", "name": """#).replacingOccurrences(of: #""name": "t", "#, with: "")),
            ("unknown derived value", job(top: #", "derive": ["dhsh"]"#)),
            ("BlurHash components out of range", job(top: #", "derive": [{"value": "blurhash", "x": 10}]"#)),
            ("a setting of another derived value", job(top: #", "derive": [{"value": "dhash", "x": 4}]"#)),
            ("derive not a list", job(top: #", "derive": "dhash""#)),
        ]
        let valid = [
            ("the base job", job()),
            ("color spelling", job(chain: ##"{"op": "tint", "color": "#ff000040"}"##, output: #", "colourspace": "keep", "keepIcc": true"#)),
            ("watermark alias", job(chain: #"{"op": "watermark", "image": "WATERMARK", "gravity": "southeast", "opacity": 0.5, "blend": "multiply"}"#)),
            ("crop trim", job(chain: ##"{"op": "crop", "trim": true, "threshold": 5, "background": "#fff"}"##)),
            ("crop box", job(chain: #"{"op": "crop", "x": 1, "y": 2, "width": 30, "height": 40}"#)),
            ("pad margins", job(chain: ##"{"op": "pad", "top": 4, "left": 2, "background": "#ffffff80"}"##)),
            ("resize one side", job(chain: #"{"op": "resize", "width": 100, "kernel": "cubic"}"#)),
            ("every other op", job(chain: ##"""
                {"op": "rotate", "angle": -30.5, "background": "#00000000"}, {"op": "flip", "direction": "vertical"},
                {"op": "autorotate"}, {"op": "sharpen", "sigma": 1, "m1": 0.5, "m2": 2}, {"op": "blur", "sigma": 0.8},
                {"op": "gamma", "exponent": 1.8}, {"op": "grayscale"}, {"op": "colorControls", "brightness": -0.1, "contrast": 1.2, "saturation": 0},
                {"op": "overlay", "colour": "#00f", "opacity": 0.2}, {"op": "roundCorners", "radius": 8, "corners": ["topLeft", "bottomRight"]},
                {"op": "border", "width": 2, "color": "#123456"}, {"op": "pad", "width": 300, "height": 300, "gravity": "north"},
                {"op": "flatten", "background": "#eeeeee"}
                """##)),
            ("auto with nested options", job(format: #"{"type": "auto", "jpeg": {"quality": 90}, "png": {"palette": true, "colours": 64}, "gif": {"bitdepth": 4}}"#)),
            ("every other format", job(format: #"{"type": "tiff", "compression": "lzw"}"#)),
            ("webp", job(format: #"{"type": "webp", "lossless": true, "effort": 6, "alphaQuality": 50}"#)),
            ("avif", job(format: #"{"type": "avif", "quality": 40, "effort": 2}"#)),
            ("jxl", job(format: #"{"type": "jxl", "quality": 90, "effort": 1, "lossless": false}"#)),
            ("png 16-bit", job(format: #"{"type": "png", "bitdepth": 16, "compression": 9}"#)),
            ("every section", job(top: #"""
                , "name": "nightly", "state": "nightly.sqlite", "cache": "originals", "cacheMaxBytes": 1000000,
                "concurrency": {"process": 2, "threadsPerImage": 2, "recycleAfter": 10, "download": 4, "perHost": 2},
                "limits": {"maxPixels": 1000000, "failOn": "warning", "blockUntrusted": false, "frames": 10, "maxDownloadBytes": 1000},
                "http": {"timeout": 30, "connectTimeout": 2.5, "maxRedirects": 0, "lowSpeedLimit": 0, "lowSpeedTime": 5,
                         "headers": {"X-Token": "a"}, "revalidate": "12h"},
                "retry": {"attempts": 2, "initialDelay": 0.5, "maxDelay": 10}, "blacklist": {"ttl": "7d"}
                """#)),
            ("folder source options", job(sources: #"{"path": "PHOTOS", "recursive": true, "include": ["*.jpg"], "exclude": ["nested/*"]}"#)),
            ("every derived value", job(top: #", "derive": ["thumbhash", {"value": "blurhash", "x": 9, "y": 1}, "dhash", "phash", "dominant", {"value": "focal"}]"#)),
        ]
        let workspace = try Workspace()
        let cases = broken.map { ($0.0, $0.1, false) } + valid.map { ($0.0, $0.1, true) }
        var files: [String] = []
        for (index, (_, text, _)) in cases.enumerated() {
            files.append(try workspace.writeJob(text, name: "job-\(index).json"))
        }
        let verdicts = try schemaVerdicts(workspace, files)
        for ((name, _, accepted), (file, verdict)) in zip(cases, zip(files, verdicts)) {
            let validated = try workspace.run(["validate", file])
            if accepted {
                #expect(verdict == "ok", "\(name): the schema refuses a job runner accepts: \(verdict)")
                #expect(validated.status == 0, "\(name): \(validated.stderr)")
            } else {
                #expect(verdict.hasPrefix("invalid: "), "\(name): the schema accepts a job runner refuses")
                #expect(validated.status == 2, "\(name): runner validate exited \(validated.status): \(validated.stderr)")
            }
        }
    }
}
