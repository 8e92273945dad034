import Foundation
import Testing
import TestSupport

/// A job over `folder` with one thumbnail output, in the workspace.
func simpleJob(_ workspace: Workspace, folder: String = "in", extra: String = "") throws -> String {
    try workspace.writeJob("""
    {"version": 1, "name": "simple",
     "sources": [{"path": "\(folder)", "include": ["*"]}],
     "outputs": [{"name": "t", "path": "out/{stem}.jpg",
                  "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}],
                  "format": {"type": "jpeg"}}],
     "state": "state.sqlite"\(extra)}
    """)
}

@Suite("Bad input fails only its own item")
struct CorruptInputTests {
    @Test("broken files fail with the decoder's message; the good one is written; exit 1")
    func brokenFilesIsolated() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["broken/truncated.jpg", "broken/zero.jpg", "broken/html.jpg", "broken/huge.png",
                                    "broken/bad-header.png", "photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        let result = try workspace.run([job])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(workspace.files(in: "out") == ["friends.jpg"])
        #expect(ImageProbe.open(workspace.path("out/friends.jpg"))?.width == 43)

        let failed = try workspace.run(["failed", job, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(failed.stdout.utf8)) as? [String: Any])
        let items = try #require(object["failed"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: items.map {
            (($0["source"] as! String as NSString).lastPathComponent, ($0["kind"] as! String, $0["message"] as! String))
        })
        #expect(byName.count == 5)
        #expect(byName["huge.png"]?.0 == "too-large")
        #expect(byName["huge.png"]?.1.contains("65500x65500") == true)
        #expect(byName["zero.jpg"]?.0 == "decode")
        #expect(byName["html.jpg"]?.0 == "decode")
        #expect(byName["html.jpg"]?.1.contains("is not a known file format") == true)
        // Truncation is reported by the JPEG decoder itself, not replaced with grey.
        #expect(byName["truncated.jpg"]?.0 == "decode")
        #expect(byName["truncated.jpg"]?.1.isEmpty == false)
        #expect(byName["bad-header.png"]?.0 == "decode")
        #expect(result.stderr.contains("failed:"))
    }

    @Test("a PPM, read only by an untrusted loader, names ppmload and limits.blockUntrusted, from a file and by URL; with it false both render")
    func untrustedLoaderNamed() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        let ppm = workspace.path("in/scan.ppm")
        let made = try RunningCommand("/usr/bin/vips", arguments: ["copy", Fixtures.path("photos/friends.jpg"), ppm],
                                      directory: workspace.root, environment: [:]).wait()
        try #require(made.status == 0, "\(made.stderr)")
        let server = try HTTPTestServer(image: ppm)
        try workspace.write(server.url("/img/scan.ppm") + "\n", to: "urls.txt")
        let text = { (block: Bool) in
            #"{"version": 1, "sources": [{"path": "in", "include": ["*.ppm"]}, {"list": "urls.txt"}], "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg", "#
                + #""chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}}], "#
                + #""limits": {"blockUntrusted": \#(block)}, "state": "state.sqlite"}"#
        }
        let path = try workspace.writeJob(text(true))
        let blocked = try workspace.run([path])
        #expect(blocked.status == 1, "\(blocked.stderr)")
        let messages = try StateDatabase(path: workspace.path("state.sqlite")).rows("SELECT key, error_kind, error_message FROM item")
        #expect(messages.count == 2, "\(messages)")
        for row in messages {
            #expect(row[1] == "untrusted-format" && row[2].contains("only libvips' ppmload reads this file")
                    && row[2].contains("limits.blockUntrusted (true by default) blocks it: set it to false"), "\(row)")
        }
        try workspace.writeJob(text(false))
        let allowed = try workspace.run([path])
        #expect(allowed.status == 0, "\(allowed.stdout) \(allowed.stderr)")
        #expect(workspace.files(in: "out").count == 2, "\(workspace.files(in: "out"))")
        for file in workspace.files(in: "out") {
            #expect(ImageProbe.open(workspace.path("out/" + file))?.width == 64, "\(file)")
        }
    }

    @Test("a worker that crashes fails only the item it held, after one retry")
    func workerCrashIsolated() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "extra/ladybird.jpg"], to: "in")
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/wine.webp"), toPath: workspace.path("in/crashme.webp"))
        let job = try simpleJob(workspace)
        let result = try workspace.run([job, "-j", "1"], environment: ["RUNNER_TEST_CRASH_ON": "crashme"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("3 done, 1 failed"))
        #expect(result.stderr.contains("retrying it once"))
        #expect(workspace.files(in: "out") == ["fig-bowl.jpg", "friends.jpg", "ladybird.jpg"])
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        let kind: String? = try state.scalar("SELECT error_kind FROM item WHERE state = 'failed'")
        #expect(kind == "crashed")
        let attempts: Int? = try state.scalar("SELECT attempts FROM item WHERE state = 'failed'")
        #expect(attempts == 2)
        // The next source was already queued to the worker that died; it was not attempted then.
        let doneAttempts: Int? = try state.scalar("SELECT MAX(attempts) FROM item WHERE state = 'done'")
        #expect(doneAttempts == 1)
    }
}

@Suite("Job files are rejected before any work, naming the exact key")
struct ValidationTests {
    func rejection(_ job: String) throws -> CommandResult {
        let workspace = try Workspace()
        let path = try workspace.writeJob(job)
        let result = try workspace.run(["validate", path])
        let run = try workspace.run([path])
        #expect(run.status == 2)
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state.sqlite")), "no work before validation")
        return result
    }

    func job(output: String, extra: String = "") -> String {
        """
        {"version": 1, "sources": [{"path": "\(Fixtures.path("photos"))"}], "state": "state.sqlite",
         "outputs": [\(output)]\(extra)}
        """
    }

    @Test("a bad value names its location", arguments: [
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 0}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[0].width: must be a positive integer"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "rotate", "angle": 90}, {"op": "crop", "width": 5, "height": 5}, {"op": "blur", "sigma": -1}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[2].sigma: must be > 0"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "blurr", "sigma": 1}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[0].op: unknown op \"blurr\" (did you mean \"blur\"?)"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "blur", "sigma": 1, "radius": 2}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[0]: unknown key \"radius\" (known: op, sigma)"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "widht": 100}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[0]: unknown key \"widht\" (did you mean \"width\"?)"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg", "quality": 101}}"#,
         "outputs[0].format.quality: must be between 1 and 100"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "bmp"}}"#,
         "outputs[0].format.type: unknown format \"bmp\""),
        (#"{"name": "a", "path": "o/{nme}.jpg", "chain": [], "format": {"type": "jpeg"}}"#,
         "outputs[0].path: unknown token {nme}"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "width": "big"}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[0].width: must be a number, not a string"),
        (#"{"name": "a", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 10, "fit": "squash"}], "format": {"type": "jpeg"}}"#,
         "outputs[0].chain[0].fit: must be one of cover, contain, fill, inside, outside"),
    ])
    func badValue(output: String, message: String) throws {
        let result = try rejection(job(output: output))
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test("a key path error gives its line and column too, as a syntax error does; those found while planning as well")
    func lineAndColumn() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try workspace.copyFixtures(["photos/friends.jpg"], to: "more")
        let lines = [
            #"{"#,
            #"  "version": 1,"#,
            #"  "sources": [{"path": "in"}, {"path": "more"}],"#,
            #"  "outputs": ["#,
            #"    {"name": "t", "path": "out/{stem}.jpg","#,
            #"     "chain": [{"op": "thumbnail", "width": -3, "height": 5}],"#,
            #"     "format": {"type": "jpeg"}}"#,
            #"  ]"#,
            #"}"#,
        ]
        let text = lines.joined(separator: "\n")
        func rejected(_ text: String) throws -> String {
            try workspace.writeJob(text)
            let result = try workspace.run(["validate", "job.json"])
            #expect(result.status == 2)
            return result.stderr
        }
        // The value, the unknown key itself, the object missing a key; and the path of a collision, found while planning.
        #expect(try rejected(text).contains("runner: job.json:6:45: outputs[0].chain[0].width: must be a positive integer\n"))
        #expect(try rejected(text.replacingOccurrences(of: #""width": -3"#, with: #""widht": 3"#))
            .contains(#"runner: job.json:6:36: outputs[0].chain[0]: unknown key "widht" (did you mean "width"?)"#))
        #expect(try rejected(text.replacingOccurrences(of: #""name": "t", "#, with: "")).contains("runner: job.json:5:5: outputs[0].name: is required\n"))
        #expect(try rejected(text.replacingOccurrences(of: "-3", with: "3").replacingOccurrences(of: "out/{stem}.jpg", with: "out/one.jpg"))
            .contains("runner: job.json:5:27: outputs[0].path: two items would write \(workspace.path("out/one.jpg"))"))
        // Columns count characters: "é" is one.
        #expect(try rejected(text.replacingOccurrences(of: #""name": "t""#, with: #""name": "é", "nam": 1"#))
            .contains(#"runner: job.json:5:19: outputs[0]: unknown key "nam""#))
    }

    @Test("top-level problems: version, unknown keys, URLs, limits, collisions")
    func topLevel() throws {
        let output = #"{"name": "a", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}"#
        #expect(try rejection(#"{"version": 2}"#).stderr.contains("version: version 2 is not supported"))
        #expect(try rejection(job(output: output, extra: #", "concurency": {}"#)).stderr.contains(#/job\.json:2:\d+: unknown key "concurency" \(did you mean "concurrency"\?\)/#))
        #expect(try rejection(job(output: output, extra: #", "limits": {"failOn": "sometimes"}"#))
            .stderr.contains("limits.failOn: must be one of none, truncated, error, warning"))
        #expect(try rejection(#"{"version": 1, "sources": [{"url": "ftp://example.com/a.jpg"}], "outputs": [\#(output)]}"#)
            .stderr.contains("sources[0].url: must be an absolute http:// or https:// URL"))
        #expect(try rejection(#"{"version": 1, "sources": [{"path": "https://example.com/a.jpg"}], "outputs": [\#(output)]}"#)
            .stderr.contains("sources[0].path: is a URL; use a \"url\" source"))
        #expect(try rejection(job(output: output, extra: #", "blacklist": {"ttl": "soon"}"#))
            .stderr.contains("blacklist.ttl: must be a duration"))
        #expect(try rejection(job(output: output, extra: #", "http": {"headersFromEnv": {"Authorization": "RUNNER_TEST_UNSET_VARIABLE"}}"#))
            .stderr.contains("http.headersFromEnv.Authorization: environment variable RUNNER_TEST_UNSET_VARIABLE is not set"))
        #expect(try rejection(job(output: #"{"name": "a", "path": "o/x.jpg", "chain": [], "format": {"type": "jpeg"}}"#))
            .stderr.contains("outputs[0].path: two items would write"))
        #expect(try rejection("{not json").stderr.contains("job.json:1:2: expected a key in double quotes or '}'"))
        #expect(try rejection("{\"version\": 1,\n  \"sources\": []\n  \"outputs\": []}").stderr
            .contains("job.json:3:3: expected ',' or '}'\n"))
        #expect(try rejection(#"{"version": 1, "sources": [{"path": "/nonexistent/folder"}], "outputs": [\#(output)]}"#)
            .stderr.contains("sources[0].path: /nonexistent/folder: No such file or directory"))
    }

    @Test("validate accepts the demo job")
    func validDemo() throws {
        let workspace = try Workspace()
        let result = try workspace.run(["validate", try demoJob(in: workspace)])
        #expect(result.status == 0)
        #expect(result.stdout.contains("valid (2 outputs: thumb, large; 24 items)"))
    }
}

@Suite("One run per state database")
struct LockTests {
    @Test("a second run exits 75 naming the process that holds the job")
    func lockHeld() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        var held: RunLock? = try RunLock(statePath: workspace.path("state.sqlite"))
        let result = try workspace.run([job])
        #expect(result.status == 75)
        #expect(result.stderr.contains("(pid \(getpid()))"))
        #expect(workspace.files(in: "out").isEmpty)
        #expect(held != nil)
        held = nil
        #expect(try workspace.run([job]).status == 0)
    }
}

/// Which failures stand until something changes and which run again every night (docs/OPERATIONS.md, Failures).
@Suite("Failure kinds: final until the source or the job changes, or retried")
struct FailureKindTests {
    struct Row: CustomStringConvertible, Sendable {
        let kind: String
        /// The source's file name, and how the test makes it.
        let source: String
        let chain: String
        let format: String
        var path = "out/{stem}.jpg"
        var limits = ""
        let exits: [Int32]
        var description: String { kind }
    }

    static let rows = [
        Row(kind: "decode", source: "truncated.jpg", chain: #"{"op": "thumbnail", "width": 32, "fit": "inside"}"#, format: "jpeg", exits: [1, 0, 0]),
        Row(kind: "too-large", source: "friends.jpg", chain: #"{"op": "thumbnail", "width": 32, "fit": "inside"}"#, format: "jpeg",
            limits: #", "limits": {"maxPixels": 100}"#, exits: [1, 0, 0]),
        Row(kind: "process", source: "friends.jpg", chain: #"{"op": "crop", "width": 10, "height": 10, "x": 9000000, "y": 0}"#,
            format: "jpeg", exits: [1, 0, 0]),
        Row(kind: "encode", source: "strip.png", chain: "", format: "webp", path: "out/{stem}.webp", exits: [1, 0, 0]),
        Row(kind: "write", source: "friends.jpg", chain: #"{"op": "thumbnail", "width": 32, "fit": "inside"}"#, format: "jpeg",
            path: "out/{stem}" + String(repeating: "x", count: 260) + ".jpg", exits: [1, 1, 1]),
    ]

    @Test("over three runs, exit codes 1, 0, 0 where the failure is final, 1, 1, 1 where it is retried", arguments: rows)
    func threeNights(row: Row) throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        switch row.source {
        case "truncated.jpg": try FileManager.default.copyItem(atPath: Fixtures.path("broken/truncated.jpg"), toPath: workspace.path("in/truncated.jpg"))
        case "strip.png":
            // Wider than WebP can hold (16383 px): libwebp refuses it whatever the machine.
            let made = try RunningCommand("/usr/bin/vips", arguments: ["black", workspace.path("in/strip.png"), "17000", "8"],
                                          directory: workspace.root, environment: [:]).wait()
            #expect(made.status == 0, "\(made.stderr)")
        default: try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        }
        let job = try workspace.writeJob("""
        {"version": 1, "name": "kinds", "sources": [{"path": "in"}],
         "outputs": [{"name": "o", "path": "\(row.path)", "chain": [\(row.chain)], "format": {"type": "\(row.format)"}}],
         "state": "state.sqlite"\(row.limits)}
        """)
        var exits: [Int32] = []
        for _ in 0..<3 { exits.append(try workspace.run([job]).status) }
        #expect(exits == row.exits, "\(row.kind)")
        let recorded: String? = try StateDatabase(path: workspace.path("state.sqlite")).scalar("SELECT error_kind FROM item")
        #expect(recorded == row.kind)
    }
}
