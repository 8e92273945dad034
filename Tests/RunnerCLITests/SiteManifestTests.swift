import Foundation
import Testing
import TestSupport
import Imaging

/// Checks manifests against `runner schema --manifest` with Debian's python3-jsonschema (installed
/// by `make deps`), and their facts against the files themselves: each done output's file exists at
/// its path relative to the manifest, with that many bytes and FNV-1a 64 (computed here, in Python)
/// starting with its hash, and so is each image of its `sets`; each source's contentHash is its file's FNV-1a 64. A `.jsonl` file's every
/// line is checked as a source. Prints `ok` or one problem a line.
private let checker = """
    import json, os, sys
    from jsonschema import Draft202012Validator
    schema = json.load(open(sys.argv[1]))
    Draft202012Validator.check_schema(schema)
    def fnv(path):
        h = 0xcbf29ce484222325
        for b in open(path, 'rb').read():
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        return '%016x' % h
    problems = []
    for path in sys.argv[2:]:
        base = os.path.dirname(path)
        if path.endswith('.jsonl'):
            validator = Draft202012Validator({'$defs': schema['$defs'], '$ref': '#/$defs/source'})
            documents = [json.loads(line) for line in open(path)]
            sources = documents
        else:
            validator = Draft202012Validator(schema)
            documents = [json.load(open(path))]
            sources = documents[0]['sources']
        for document in documents:
            problems += ['%s: %s at /%s' % (path, e.message, '/'.join(map(str, e.absolute_path))) for e in validator.iter_errors(document)]
        for source in sources:
            name = source.get('key', source.get('id'))
            if 'contentHash' in source and 'path' in source and source['contentHash'] != fnv(source['path']):
                problems.append('%s: contentHash of %s' % (path, name))
            for output in source['outputs']:
                if output['state'] != 'done':
                    continue
                file = os.path.join(base, output['path'])
                if not os.path.isfile(file) or os.path.getsize(file) != output['bytes'] or not fnv(file).startswith(output['hash']):
                    problems.append('%s: %s of %s does not match its file' % (path, output['name'], name))
            for block, formats in source.get('sets', {}).items():
                for entry in formats:
                    for image in entry['images']:
                        file = os.path.join(base, image['path'])
                        if not os.path.isfile(file) or os.path.getsize(file) != image['bytes'] or not fnv(file).startswith(image['hash']):
                            problems.append('%s: sets.%s %s of %s does not match its file' % (path, block, image['path'], name))
    print('\\n'.join(problems) or 'ok')
    """

@Suite("The site manifest: every source and output, for a site build", .serialized)
struct SiteManifestTests {
    /// Three photos and a truncated JPEG (its items fail as decode), two outputs, and `manifest`.
    func job(_ workspace: Workspace, manifest: String = #"{"path": "site/images.json"}"#) throws -> String {
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "photos/aitzgorri.jpg", "broken/truncated.jpg"], to: "in")
        return try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "small", "path": "site/img/{stem}-small.webp",
                      "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "webp"}},
                     {"name": "large", "path": "site/img/{stem}.jpg",
                      "chain": [{"op": "thumbnail", "width": 200, "fit": "inside"}], "format": {"type": "jpeg"}}],
         "manifest": \(manifest), "state": "state/job.sqlite"}
        """)
    }

    func check(_ workspace: Workspace, _ manifests: [String]) throws -> String {
        let schema = try workspace.run(["schema", "--manifest"])
        #expect(schema.status == 0, "\(schema.stderr)")
        try workspace.write(schema.stdout, to: "manifest.schema.json")
        let result = try python(checker, [workspace.path("manifest.schema.json")] + manifests.map(workspace.path))
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func document(_ workspace: Workspace, _ relative: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: workspace.path(relative)))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    func sources(_ document: [String: Any]) -> [[String: Any]] { document["sources"] as? [[String: Any]] ?? [] }

    @Test("a run writes the whole job: done outputs with their sizes, types and hashes (checked against the files), the failed source with its reason")
    func completeManifest() throws {
        let workspace = try Workspace()
        let job = try job(workspace)
        let run = try workspace.run([job])
        #expect(run.status == 1, "the truncated JPEG fails: \(run.stderr)")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let manifest = try document(workspace, "site/images.json")
        #expect(manifest["manifestVersion"] as? Int == 1 && manifest["job"] as? String == "job")
        let listed = sources(manifest)
        #expect(listed.map { ($0["key"] as? String ?? "") } == ["aitzgorri.jpg", "fig-bowl.jpg", "friends.jpg", "truncated.jpg"].map { workspace.path("in/" + $0) })
        let friends = listed[2]
        #expect(friends["width"] as? Int == 533 && friends["height"] as? Int == 800 && friends["format"] as? String == "jpeg")
        let outputs = try #require(friends["outputs"] as? [[String: Any]])
        #expect(outputs.map { $0["name"] as? String } == ["large", "small"], "outputs by name")
        #expect(outputs[0]["path"] as? String == "img/friends.jpg" && outputs[0]["type"] as? String == "image/jpeg")
        #expect(outputs[0]["width"] as? Int == 200 && outputs[0]["height"] as? Int == 300)
        #expect(outputs[1]["path"] as? String == "img/friends-small.webp" && outputs[1]["type"] as? String == "image/webp")
        let broken = try #require(listed[3]["outputs"] as? [[String: Any]])
        #expect(broken.count == 2 && broken.allSatisfy { $0["state"] as? String == "failed" && $0["kind"] as? String == "decode" })
        #expect(broken.allSatisfy { !($0["reason"] as? String ?? "").isEmpty }, "the decoder's message")
        #expect(listed[3]["width"] == nil, "nothing rendered: no facts of the source")
    }

    @Test("derived values stored by the run are in the manifest, per source, the same as runner duplicates reads")
    func derivedValues() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "broken/truncated.jpg"], to: "in")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}], "derive": ["thumbhash", "dhash", "dominant"],
             "outputs": [{"name": "small", "path": "site/img/{stem}.webp",
                          "chain": [{"op": "thumbnail", "width": 160, "fit": "inside"}], "format": {"type": "webp"}}],
             "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
            """)
        #expect(try workspace.run([job]).status == 1, "the truncated JPEG fails")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let listed = sources(try document(workspace, "site/images.json"))
        let duplicates = try workspace.run(["duplicates", job, "--json"])
        #expect(duplicates.status == 0, "\(duplicates.stderr)")
        // Every compared source's dHash, as the duplicates command reads it from state.
        let report = try #require(try JSONSerialization.jsonObject(with: Data(duplicates.stdout.utf8)) as? [String: Any])
        #expect(report["sources"] as? Int == 2)
        for source in listed where (source["key"] as? String)?.hasSuffix("truncated.jpg") == false {
            let derived = try #require(source["derived"] as? [String: Any], "\(source["key"] ?? "")")
            #expect(Set(derived.keys) == ["thumbhash", "dhash", "dominant"])
            #expect((derived["thumbhash"] as? String)?.isEmpty == false)
            #expect((derived["dominant"] as? String)?.hasPrefix("#") == true)
            #expect((derived["dhash"] as? String)?.count == 16)
        }
        #expect(listed.first { ($0["key"] as? String)?.hasSuffix("truncated.jpg") == true }?["derived"] == nil)
    }

    @Test("placeholder: a PNG data URL under 1.5 kB, at most 16 px, the source's own ThumbHash decoded")
    func placeholderDataURL() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "formats/alpha.png", "photos/aitzgorri.jpg"], to: "in")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}], "derive": ["thumbhash", "placeholder"],
             "outputs": [{"name": "small", "path": "site/img/{stem}.webp",
                          "chain": [{"op": "thumbnail", "width": 160, "fit": "inside"}], "format": {"type": "webp"}}],
             "manifest": {"path": "site/images.json"}, "state": "state/job.sqlite"}
            """)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let listed = sources(try document(workspace, "site/images.json"))
        #expect(listed.count == 3)
        for source in listed {
            let derived = try #require(source["derived"] as? [String: Any], "\(source)")
            let url = try #require(derived["placeholder"] as? String)
            let prefix = "data:image/png;base64,"
            #expect(url.hasPrefix(prefix) && url.utf8.count < 1536, "\(url.prefix(80))… \(url.utf8.count) bytes")
            let png = try #require(Data(base64Encoded: String(url.dropFirst(prefix.count))))
            let file = workspace.path("placeholder.png")
            try png.write(to: URL(fileURLWithPath: file))
            let probe = try #require(ImageProbe.open(file))
            #expect(max(probe.width, probe.height) == 16 && min(probe.width, probe.height) >= 1, "\(probe.width)x\(probe.height)")
            // The same picture as the ThumbHash beside it, decoded.
            let hash = try #require((derived["thumbhash"] as? String).flatMap { Data(base64Encoded: $0) })
            #expect(try ThumbHash.placeholderPNG([UInt8](hash), side: 16) == png)
        }
    }

    /// The inode and modification time of a file or folder: what a site watcher sees change.
    func stamp(_ workspace: Workspace, _ relative: String) throws -> [String] {
        let attributes = try FileManager.default.attributesOfItem(atPath: workspace.path(relative))
        return ["\(attributes[.systemFileNumber] ?? "")", "\((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"]
    }

    /// Sets modification times far back, so that a rewrite, or a temporary made and removed in a
    /// folder, shows at once whatever the clock's granularity.
    func backdate(_ workspace: Workspace, _ paths: [String]) throws {
        for path in paths {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: workspace.path(path))
        }
    }

    @Test("an unchanged rerun touches nothing (the manifest's bytes, inode and mtime, its folder's mtime: no temporary made); a changed source rewrites it by rename")
    func incremental() throws {
        let workspace = try Workspace()
        let job = try job(workspace)
        _ = try workspace.run([job])
        let path = workspace.path("site/images.json")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try backdate(workspace, ["site/images.json", "site"])
        let before = try ["site/images.json", "site"].map { try stamp(workspace, $0) }
        let rerun = try workspace.run([job])
        #expect(rerun.status == 0, "the known failure is carried over: \(rerun.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        #expect(try ["site/images.json", "site"].map { try stamp(workspace, $0) } == before, "not rewritten, nothing staged beside it")

        // Another picture under the same name: its outputs are made again, and the manifest says so,
        // renamed into place (a new inode) with nothing left beside it.
        try FileManager.default.removeItem(atPath: workspace.path("in/friends.jpg"))
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/picos-de-europa.jpg"), toPath: workspace.path("in/friends.jpg"))
        #expect(try workspace.run([job]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) != bytes)
        #expect(try stamp(workspace, "site/images.json")[0] != before[0][0], "a new file renamed over the old one")
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.path("site")).sorted() == ["images.json", "img"])
        #expect(try check(workspace, ["site/images.json"]) == "ok", "the new files' sizes and hashes")
        let friends = sources(try document(workspace, "site/images.json"))[2]
        #expect(friends["width"] as? Int == 1024 && friends["height"] as? Int == 768)
    }

    @Test("manifest.sources id: a manifest for a public folder names each source by an opaque, stable id; no path, URL or message quoting one")
    func publicManifest() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        try workspace.copyFixtures(["photos/friends.jpg", "broken/truncated.jpg"], to: "in")
        try workspace.write(server.url("/img/remote.jpg") + "\n", to: "urls.txt")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}, {"list": "urls.txt"}],
             "outputs": [{"name": "small", "path": "site/img/{key}.webp",
                          "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "webp"}}],
             "manifest": {"path": "site/images.json", "sources": "id"}, "state": "state/job.sqlite"}
            """)
        #expect(try workspace.run([job]).status == 1, "the truncated JPEG fails")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let text = try String(contentsOfFile: workspace.path("site/images.json"), encoding: .utf8)
        #expect(!text.contains(workspace.root) && !text.contains("127.0.0.1") && !text.contains("truncated"), "\(text)")
        let listed = sources(try document(workspace, "site/images.json"))
        #expect(listed.count == 3)
        for source in listed {
            #expect(source["key"] == nil && source["path"] == nil && source["url"] == nil, "\(source)")
            let id = try #require(source["id"] as? String)
            let output = try #require((source["outputs"] as? [[String: Any]])?.first)
            // The id is the {key} token's value: the output's file name here.
            #expect(output["path"] as? String == "img/\(id).webp", "\(source)")
            #expect(output["reason"] == nil && output["warning"] == nil, "\(output)")
        }
        #expect(listed.contains { ($0["outputs"] as? [[String: Any]])?.first?["kind"] as? String == "decode" })
        // The same ids from state alone.
        #expect(try workspace.run(["manifest", job, "--out", "again.json"]).status == 0)
        #expect(sources(try document(workspace, "again.json")).map { $0["id"] as? String } == listed.map { $0["id"] as? String })
    }

    @Test("prune --delete rewrites the manifest: a source removed from the job leaves it with its files; a plain prune changes nothing")
    func pruneRewritesManifest() throws {
        let workspace = try Workspace()
        let path = try job(workspace)
        #expect(try workspace.run([path]).status == 1)
        #expect(sources(try document(workspace, "site/images.json")).count == 4)
        try FileManager.default.removeItem(atPath: workspace.path("in/fig-bowl.jpg"))
        let listed = try workspace.run(["prune", path])
        #expect(listed.status == 0 && listed.stdout.contains("fig-bowl"), "\(listed.stdout) \(listed.stderr)")
        #expect(sources(try document(workspace, "site/images.json")).count == 4, "listing alone changes nothing")
        let pruned = try workspace.run(["prune", path, "--delete"])
        #expect(pruned.status == 0, "\(pruned.stdout) \(pruned.stderr)")
        let left = sources(try document(workspace, "site/images.json"))
        #expect(left.count == 3 && !left.contains { ($0["key"] as? String ?? "").contains("fig-bowl") }, "\(left)")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
    }

    @Test("runner manifest --out and a shard's part, unchanged, touch nothing either: the file and its folder keep their stamps")
    func unchangedCommandAndShard() throws {
        let workspace = try Workspace()
        let job = try job(workspace)
        _ = try workspace.run([job, "--shard", "0/2"])
        #expect(try workspace.run(["manifest", job, "--out", "elsewhere/all.json"]).status == 0)
        let files = ["site/images.shard-0-of-2.json", "site", "elsewhere/all.json", "elsewhere"]
        try backdate(workspace, files)
        let before = try files.map { try stamp(workspace, $0) }
        #expect(try workspace.run([job, "--shard", "0/2"]).status == 0)
        let again = try workspace.run(["manifest", job, "--out", "elsewhere/all.json"])
        #expect(again.status == 0 && again.stdout.hasSuffix("(unchanged)\n"), "\(again.stdout)\(again.stderr)")
        #expect(try files.map { try stamp(workspace, $0) } == before)
    }

    @Test("a manifest anywhere the job names it (the README's ../site/data/images.json): written there, its folder made; a collision there is still refused")
    func pathOutsideTheJobsFolders() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        func job(_ manifest: String) throws -> String {
            try workspace.write("""
                {"version": 1, "sources": [{"path": "../in"}],
                 "outputs": [{"name": "small", "path": "../public/img/{stem}.webp",
                              "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "webp"}}],
                 "manifest": {"path": "\(manifest)"}, "state": "state/job.sqlite"}
                """, to: "jobs/job.json")
            return workspace.path("jobs/job.json")
        }
        let run = try workspace.run([try job("../site/data/images.json")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try check(workspace, ["site/data/images.json"]) == "ok")
        let outputs = sources(try document(workspace, "site/data/images.json")).compactMap { $0["outputs"] as? [[String: Any]] }
        #expect(outputs.map { $0.first?["path"] as? String } == ["../../public/img/fig-bowl.webp", "../../public/img/friends.webp"])

        let written = try stamp(workspace, "public/img/friends.webp")
        for (manifest, message) in [("../public/img/friends.webp", "would be written at the manifest's path"),
                                    ("../public", "is a folder outputs[0] writes into"),
                                    ("state/job.sqlite", "is the state database's path")] {
            let path = try job(manifest)
            for command in [[path], ["validate", path]] {
                let refused = try workspace.run(command)
                #expect(refused.status == 2 && refused.stderr.contains("manifest.path") && refused.stderr.contains(message), "\(manifest): \(refused.stderr)")
            }
        }
        #expect(try stamp(workspace, "public/img/friends.webp") == written, "nothing was run")
    }

    @Test("a state from before v10 (source facts on each done item, no source row) migrates (runner migrate) to the same manifest, bytes and all; a rerun leaves it alone")
    func migratedFromV9() throws {
        let workspace = try Workspace()
        let job = try job(workspace)
        #expect(try workspace.run([job]).status == 1, "the truncated JPEG fails")
        let path = workspace.path("site/images.json")
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        // The state as v9 recorded it: the facts of a source on each of its done items, no `source`
        // row for a job without derive, and no v10 in the migration log.
        let downgrade = try python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            for column in ('source_width INTEGER', 'source_height INTEGER', 'source_format TEXT', 'source_hash TEXT'):
                db.execute('ALTER TABLE item ADD COLUMN ' + column)
            db.execute("UPDATE item SET source_width = source.width, source_height = source.height, source_format = source.format, "
                       "source_hash = source.content_hash FROM source WHERE source.key = item.source_key AND item.state = 'done'")
            print(db.execute('SELECT COUNT(*) FROM item WHERE source_format IS NOT NULL').fetchone()[0])
            db.execute('DELETE FROM source')
            db.execute("DELETE FROM grdb_migrations WHERE identifier = 'v10: source facts'")
            db.commit()
            """, [workspace.path("state/job.sqlite")])
        #expect(downgrade.status == 0 && downgrade.stdout == "6\n", "\(downgrade.stdout)\(downgrade.stderr)")
        try FileManager.default.removeItem(atPath: path)
        // `manifest` only reads: it names the command that upgrades the state, which then migrates it.
        let refused = try workspace.run(["manifest", job])
        #expect(refused.status == 65 && refused.stderr.contains("runner migrate JOB"), "\(refused.stderr)")
        #expect(try workspace.run(["migrate", job]).status == 0)
        let manifest = try workspace.run(["manifest", job])
        #expect(manifest.status == 0, "\(manifest.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == written, "the same bytes from the migrated state")
        let columns = try python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            print(sorted(row[1] for row in db.execute('PRAGMA table_info(item)') if row[1].startswith('source_')))
            print(db.execute('SELECT COUNT(*) FROM source').fetchone()[0])
            """, [workspace.path("state/job.sqlite")])
        #expect(columns.stdout == "['source_key']\n3\n", "the item columns went into a row per rendered source: \(columns.stdout)\(columns.stderr)")
        try backdate(workspace, ["site/images.json"])
        let before = try stamp(workspace, "site/images.json")
        #expect(try workspace.run([job]).status == 0)
        #expect(try stamp(workspace, "site/images.json") == before)
    }

    @Test("JSON Lines: manifest.format jsonl and runner manifest --jsonl write one source a line, the same objects as the JSON document")
    func jsonLines() throws {
        let workspace = try Workspace()
        let job = try job(workspace, manifest: #"{"path": "site/images.jsonl", "format": "jsonl"}"#)
        _ = try workspace.run([job])
        #expect(try check(workspace, ["site/images.jsonl"]) == "ok")
        let lines = try String(contentsOfFile: workspace.path("site/images.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4)
        // From the state database alone, into another folder: the paths follow the file.
        let json = try workspace.run(["manifest", job, "--out", "elsewhere/all.json"])
        #expect(json.status == 0 && json.stdout.hasSuffix("elsewhere/all.json\n"), "\(json.stdout)\(json.stderr)")
        let jsonl = try workspace.run(["manifest", job, "--jsonl", "--out", "site/again.jsonl"])
        #expect(jsonl.status == 0, "\(jsonl.stderr)")
        #expect(try String(contentsOfFile: workspace.path("site/again.jsonl"), encoding: .utf8)
                == String(contentsOfFile: workspace.path("site/images.jsonl"), encoding: .utf8))
        #expect(try check(workspace, ["elsewhere/all.json", "site/again.jsonl"]) == "ok")
        let outputs = sources(try document(workspace, "elsewhere/all.json"))[0]["outputs"] as? [[String: Any]]
        #expect(outputs?.first?["path"] as? String == "../site/img/aitzgorri.jpg")
        // The JSON document beside it lists the same source objects, in the same order.
        #expect(try workspace.run(["manifest", job, "--out", "site/whole.json"]).status == 0)
        let lineObjects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? NSDictionary }
        #expect(sources(try document(workspace, "site/whole.json")).map { $0 as NSDictionary } == lineObjects.compactMap { $0 })
        let again = try workspace.run(["manifest", job, "--jsonl", "--out", "site/again.jsonl"])
        #expect(again.stdout.hasSuffix("(unchanged)\n"), "\(again.stdout)")
    }

    @Test("each shard writes its part; runner manifest merges every shard's database into the whole job, in order")
    func shards() throws {
        let workspace = try Workspace()
        let job = try job(workspace)
        for index in 0..<3 {
            let run = try workspace.run([job, "--shard", "\(index)/3"])
            #expect([0, 1].contains(run.status), "\(run.stderr)")
        }
        let parts = (0..<3).map { "site/images.shard-\($0)-of-3.json" }
        #expect(try check(workspace, parts) == "ok")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("site/images.json")), "no shard writes the whole")
        var keys: [String] = []
        for (index, part) in parts.enumerated() {
            let document = try document(workspace, part)
            #expect(document["shard"] as? String == "\(index)/3")
            keys += sources(document).map { $0["key"] as? String ?? "" }
        }
        let merged = try workspace.run(["manifest", job])
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try check(workspace, ["site/images.json"]) == "ok")
        let whole = sources(try document(workspace, "site/images.json"))
        #expect(whole.map { $0["key"] as? String ?? "" } == keys.sorted() && keys.count == 4)
        #expect(whole.allSatisfy { ($0["outputs"] as? [Any])?.count == 2 })
    }

    @Test("a manifest path at an output's path or folder, the state database or the job file, or a bad format is a job-file error naming the key; nothing is written")
    func badKeys() throws {
        let cases: [(manifest: String, location: String, message: String)] = [
            (#"{"path": "site/img/friends.jpg"}"#, "manifest.path", "would be written at the manifest's path"),
            (#"{"path": "site/img"}"#, "manifest.path", "is a folder outputs[0] writes into"),
            (#"{"path": "site"}"#, "manifest.path", "is a folder outputs[0] writes into"),
            (#"{"path": "job.json"}"#, "manifest.path", "is the job file"),
            (#"{"path": "state/job.sqlite"}"#, "manifest.path", "is the state database's path"),
            (#"{"path": "site/images.json", "format": "yaml"}"#, "manifest.format", "must be one of json, jsonl"),
            (#"{"paht": "site/images.json"}"#, "manifest", "unknown key \"paht\" (did you mean \"path\"?)"),
        ]
        for bad in cases {
            let workspace = try Workspace()
            let job = try job(workspace, manifest: bad.manifest)
            for command in [[job], ["validate", job]] {
                let result = try workspace.run(command)
                #expect(result.status == 2, "\(bad.manifest): \(result.stderr)")
                #expect(result.stderr.contains(bad.location) && result.stderr.contains(bad.message), "\(bad.manifest): \(result.stderr)")
            }
            #expect(workspace.files(in: "site").isEmpty && !FileManager.default.fileExists(atPath: workspace.path("state/job.sqlite")),
                    "\(bad.manifest): nothing written")
        }
    }
}
