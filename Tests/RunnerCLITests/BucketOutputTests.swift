import Foundation
import Testing
import TestSupport

/// Outputs, the site manifest and pruning in a bucket, against SeaweedFS started by each test
/// behind the counting proxy of Tests/http-server, with boto3 as the second client that checks
/// what runner wrote.
@Suite("Bucket outputs")
struct BucketOutputTests {
    static let credentials = BucketSourceTests.credentials
    static let photos = ["aitzgorri", "bird-lamp", "fig-bowl", "friends", "nested/life", "nested/sunset", "picos-de-europa", "wine"]
    /// Names whose keys a signature must encode: a space, `+`, `=`, `%`, non-ASCII.
    static let awkward = ["with space+plus=%", "日本/写真"]

    /// SeaweedFS with an empty bucket `site`, and the proxy in front of it.
    static func store() throws -> (ObjectStoreServer, HTTPTestServer) {
        let server = try ObjectStoreServer.seaweedFS(accessKey: BucketSourceTests.accessKey, secretKey: BucketSourceTests.secret)
        let created = try server.python(#"boto("s3", sys.argv[1], sys.argv[2]).create_bucket(Bucket="site")"#,
                                        [BucketSourceTests.accessKey, BucketSourceTests.secret])
        #expect(created.status == 0, "\(created.stderr)")
        return (server, try HTTPTestServer(upstream: "127.0.0.1:\(server.port)"))
    }

    /// Every object of `site`: its size, media type, Cache-Control and first four bytes, as boto3 reads them.
    static func objects(_ server: ObjectStoreServer) throws -> [String: (size: Int, type: String, cache: String, magic: String)] {
        let listed = try server.python("""
            import json
            s3 = boto("s3", sys.argv[1], sys.argv[2])
            found = {}
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket="site"):
                for entry in page.get("Contents", []):
                    got = s3.get_object(Bucket="site", Key=entry["Key"])
                    found[entry["Key"]] = [entry["Size"], got["ContentType"], got.get("CacheControl", ""), got["Body"].read()[:4].hex()]
            print(json.dumps(found))
            """, [BucketSourceTests.accessKey, BucketSourceTests.secret])
        try #require(listed.status == 0, "\(listed.stderr)")
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: [Any]])
        return decoded.mapValues { ($0[0] as? Int ?? -1, $0[1] as? String ?? "", $0[2] as? String ?? "", $0[3] as? String ?? "") }
    }

    static func body(_ server: ObjectStoreServer, _ key: String) throws -> Data {
        let read = try server.python(#"sys.stdout.write(boto("s3", sys.argv[1], sys.argv[2]).get_object(Bucket="site", Key=sys.argv[3])["Body"].read().hex())"#,
                                     [BucketSourceTests.accessKey, BucketSourceTests.secret, key])
        try #require(read.status == 0, "\(read.stderr)")
        var bytes = Data()
        var hex = read.stdout[...]
        while let byte = UInt8(hex.prefix(2), radix: 16) { bytes.append(byte); hex = hex.dropFirst(2) }
        return bytes
    }

    /// The fixture photos in `in/`, one output to `s3://site/thumbs/` (and `extra` more outputs).
    func job(_ workspace: Workspace, endpoint: String, extra: String = "", manifest: Bool = false, process: Int = 2) throws -> String {
        if !FileManager.default.fileExists(atPath: workspace.path("in")) {
            try FileManager.default.copyItem(atPath: Fixtures.path("photos"), toPath: workspace.path("in"))
        }
        return try workspace.writeJob("""
        {"version": 1, "name": "site",
         "sources": [{"path": "in", "recursive": true}],
         "outputs": [{"name": "t", "path": "s3://site/thumbs/{dir}/{stem}.webp", "endpoint": "\(endpoint)",
                      "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}], "format": {"type": "webp"}}\(extra)],
         \(manifest ? #""manifest": {"path": "s3://site/manifest.json"},"# : "")
         "concurrency": {"process": \(process)},
         "retry": {"initialDelay": 0.05, "maxDelay": 0.2},
         "state": "state.sqlite"}
        """)
    }

    @Test("each output PUT once with its media type and Cache-Control (keys with spaces, +, =, % and non-ASCII too), the manifest after them naming them by key; an unchanged night sends no request; no secret in any file")
    func nights() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        let endpoint = proxy.url("")
        let job = try job(workspace, endpoint: endpoint, extra: """
            , {"name": "h", "path": "s3://site/hashed/{stem}-{hash}.jpg", "endpoint": "\(endpoint)",
               "chain": [{"op": "thumbnail", "width": 32, "height": 32, "fit": "inside"}], "format": {"type": "jpeg"}},
              {"name": "c", "path": "s3://site/custom/{stem}.png", "endpoint": "\(endpoint)", "cacheControl": "private, no-store",
               "chain": [{"op": "thumbnail", "width": 16, "height": 16, "fit": "inside"}], "format": {"type": "png"}}
            """, manifest: true)
        for name in Self.awkward {
            try FileManager.default.createDirectory(atPath: workspace.path("in/" + (name as NSString).deletingLastPathComponent),
                                                    withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Fixtures.path("photos/friends.jpg"), toPath: workspace.path("in/\(name).jpg"))
        }
        let names = Self.photos + Self.awkward
        let first = try workspace.run([job], environment: Self.credentials)
        #expect(first.status == 0 && first.stdout.contains("30 done, 0 failed"), "\(first.stdout)\(first.stderr)")
        #expect(first.stderr.contains("object store: credentials from environment"), "\(first.stderr)")
        let puts = try proxy.stats().methods.filter { $0.key.hasPrefix("PUT ") }
        #expect(puts.count == 31 && puts.values.allSatisfy { $0 == 1 }, "each object and the manifest once: \(puts)")

        let stored = try Self.objects(server)
        #expect(Set(stored.keys) == Set(names.map { "thumbs/\($0).webp" } + names.map { "custom/\(($0 as NSString).lastPathComponent).png" })
            .union(stored.keys.filter { $0.hasPrefix("hashed/") }).union(["manifest.json"]))
        #expect(stored.keys.filter { $0.hasPrefix("hashed/") }.count == 10)
        for (key, object) in stored {
            let expected: (String, String, String) = switch key.prefix(while: { $0 != "/" }) {
            case "thumbs": ("image/webp", "public, max-age=86400", "52494646")  // RIFF
            case "hashed": ("image/jpeg", "public, max-age=31536000, immutable", "ffd8ff")
            case "custom": ("image/png", "private, no-store", "89504e47")
            default: ("application/json", "no-cache", "7b0a2020")  // {\n
            }
            #expect(object.type == expected.0 && object.cache == expected.1 && object.magic.hasPrefix(expected.2), "\(key): \(object)")
        }
        let manifest = try #require(try JSONSerialization.jsonObject(with: Self.body(server, "manifest.json")) as? [String: Any])
        let paths = (manifest["sources"] as? [[String: Any]] ?? []).flatMap { ($0["outputs"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String } }
        #expect(Set(paths) == Set(stored.keys.filter { $0 != "manifest.json" }), "named by key, relative to the manifest: \(paths)")
        let webp = try Self.body(server, "thumbs/nested/life.webp")
        #expect(webp.count == stored["thumbs/nested/life.webp"]?.size && webp.count > 100)

        try proxy.reset()
        let second = try workspace.run([job], environment: Self.credentials)
        #expect(second.status == 0 && second.stdout.contains("0 done, 0 failed, 30 up to date"), "\(second.stdout)\(second.stderr)")
        #expect(try proxy.stats().methods.isEmpty, "nothing changed, nothing sent")

        for file in workspace.files(in: ".") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: workspace.path(file)))
            #expect(bytes.range(of: Data(BucketSourceTests.secret.utf8)) == nil, "\(file) holds the secret")
            #expect(!file.contains(".runner-tmp-"), "a staged upload was left: \(file)")
        }
        for text in [first, second].flatMap({ [$0.stdout, $0.stderr] }) { #expect(!text.contains(BucketSourceTests.secret)) }
    }

    @Test("an output larger than partSize goes up in parts, which the second client reads back whole")
    func multipart() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("big"), withIntermediateDirectories: true)
        // Noise does not compress: 4000 x 3000 bytes of uncompressed grey TIFF, three parts of at most 5 MiB.
        try VipsCLI.run("vips", ["gaussnoise", workspace.path("big/noise.png"), "4000", "3000"])
        let job = try workspace.writeJob("""
        {"version": 1, "name": "big", "sources": [{"path": "big"}],
         "outputs": [{"name": "raw", "path": "s3://site/raw/{stem}.tif", "endpoint": "\(proxy.url(""))", "partSize": 5242880,
                      "chain": [], "format": {"type": "tiff", "compression": "none"}}],
         "state": "state.sqlite"}
        """)
        let run = try workspace.run([job], environment: Self.credentials)
        #expect(run.status == 0 && run.stdout.contains("1 done, 0 failed"), "\(run.stdout)\(run.stderr)")
        let methods = try proxy.stats().methods
        #expect(methods.keys.filter { $0.hasPrefix("POST /site/raw/noise.tif?uploads") }.count == 1, "\(methods)")
        #expect(methods.keys.filter { $0.hasPrefix("PUT /site/raw/noise.tif?partNumber=") }.count == 3, "\(methods)")
        #expect(methods.keys.filter { $0.hasPrefix("POST /site/raw/noise.tif?uploadId=") }.count == 1, "\(methods)")
        #expect(methods["PUT /site/raw/noise.tif"] == nil)
        let object = try #require(try Self.objects(server)["raw/noise.tif"])
        #expect(object.size > 2 * 5_242_880 && object.type == "image/tiff", "\(object)")
        try Self.body(server, "raw/noise.tif").write(to: URL(fileURLWithPath: workspace.path("back.tif")))
        let back = try #require(ImageProbe.open(workspace.path("back.tif")))
        #expect((back.width, back.height) == (4000, 3000))
    }

    @Test("SIGKILL after an upload and before its record: the next run sends that object once more and nothing it recorded")
    func killBetweenUploadAndRecord() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: proxy.url(""), process: 1)
        let pauses = try Pauses("recorder.uploaded@thumbs/friends", in: workspace)
        let run = try workspace.start([job], environment: Self.credentials.merging(pauses.environment) { $1 })
        #expect(pauses.wait(for: "recorder.uploaded", of: run).count == 1, "\(run.stdoutSoFar)\(run.stderrSoFar)")
        #expect(try proxy.stats().methods["PUT /site/thumbs/friends.webp"] == 1)
        run.signal(SIGKILL)
        _ = run.wait()
        let recorded = try StateDatabase(path: workspace.path("state.sqlite")).count(state: "done")
        #expect(recorded < 8)

        try proxy.reset()
        let resumed = try workspace.run([job], environment: Self.credentials)
        #expect(resumed.status == 0 && resumed.stdout.contains("\(8 - recorded) done, 0 failed, \(recorded) up to date"),
                "\(resumed.stdout)\(resumed.stderr)")
        let puts = try proxy.stats().methods.filter { $0.key.hasPrefix("PUT ") }
        #expect(puts["PUT /site/thumbs/friends.webp"] == 1, "the unrecorded upload is sent once more: \(puts)")
        #expect(puts.values.reduce(0, +) == 8 - recorded, "nothing recorded is sent again: \(puts)")
        #expect(Set(try Self.objects(server).keys) == Set(Self.photos.map { "thumbs/\($0).webp" }))
        #expect(workspace.files(in: "state.cache/uploads").isEmpty, "the killed run's staged uploads were swept")
    }

    @Test("a store that fails every PUT for now stops the run (exit 69) recording nothing done; the next run writes all; prune --delete retires an orphan's object, the manifest drops it, and with no grace the object goes")
    func outageAndPrune() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: proxy.url(""), manifest: true)
        try proxy.outage("503")
        let down = try workspace.run([job], environment: Self.credentials)
        #expect(down.status == 69 && down.stderr.contains("the object store could not be reached: HTTP 503 SlowDown"), "\(down.stdout)\(down.stderr)")
        #expect(try StateDatabase(path: workspace.path("state.sqlite")).count(state: "done") == 0)
        try proxy.outage("none")
        let back = try workspace.run([job], environment: Self.credentials)
        #expect(back.status == 0 && back.stdout.contains("8 done, 0 failed"), "\(back.stdout)\(back.stderr)")

        try FileManager.default.removeItem(atPath: workspace.path("in/wine.webp"))
        let listed = try workspace.run(["prune", job], environment: Self.credentials)
        #expect(listed.stdout.contains("delete\t\(workspace.path("in/wine.webp"))@t\ts3://site/thumbs/wine.webp"), "\(listed.stdout)\(listed.stderr)")
        #expect(try Self.objects(server)["thumbs/wine.webp"] != nil, "listing deletes nothing")
        // A site built from the manifest names the orphan's object: it is kept for keepReplaced once the manifest drops it.
        let pruned = try workspace.run(["prune", "--delete", job], environment: Self.credentials)
        #expect(pruned.status == 0 && pruned.stdout.contains("1 orphaned item dropped, 1 file retired"), "\(pruned.stdout)\(pruned.stderr)")
        #expect(try Self.objects(server)["thumbs/wine.webp"] != nil, "kept for a site built from the previous manifest")
        let manifest = String(decoding: try Self.body(server, "manifest.json"), as: UTF8.self)
        #expect(!manifest.contains("wine") && manifest.contains("thumbs/friends.webp"), "\(manifest)")
        let noGrace = try workspace.writeJob(try String(contentsOfFile: job, encoding: .utf8).replacingOccurrences(of: #""version": 1,"#, with: #""version": 1, "keepReplaced": "0s","#))
        let removed = try workspace.run(["prune", "--delete", noGrace], environment: Self.credentials)
        #expect(removed.stdout.contains("deleted\t\(workspace.path("in/wine.webp"))@t\ts3://site/thumbs/wine.webp\treplaced; past keepReplaced"), "\(removed.stdout)")
        let stored = try Self.objects(server)
        #expect(stored["thumbs/wine.webp"] == nil && stored.count == 8, "\(stored.keys)")
    }

    @Test("store keys on a file output, and a bucket manifest no output writes beside, are job-file errors naming the key")
    func misplacedKeys() throws {
        let workspace = try Workspace()
        try workspace.write("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "t", "path": "out/{stem}.webp", "cacheControl": "no-cache", "chain": [], "format": {"type": "webp"}}]}
            """, to: "file.json")
        let file = try workspace.run(["validate", workspace.path("file.json")])
        #expect(file.status == 2 && file.stderr.contains("outputs[0].cacheControl: is only for an output whose path is s3://BUCKET/..."),
                "\(file.stderr)")
        try workspace.write("""
            {"version": 1, "sources": [{"path": "in"}], "manifest": {"path": "s3://other/manifest.json"},
             "outputs": [{"name": "t", "path": "s3://site/{stem}.webp", "endpoint": "127.0.0.1:8333", "chain": [], "format": {"type": "webp"}}]}
            """, to: "bucket.json")
        let bucket = try workspace.run(["validate", workspace.path("bucket.json")])
        #expect(bucket.status == 2 && bucket.stderr.contains("outputs[0].endpoint: must be the store's URL with its scheme"), "\(bucket.stderr)")
        try workspace.write(try String(contentsOfFile: workspace.path("bucket.json"), encoding: .utf8)
            .replacingOccurrences(of: "127.0.0.1:8333", with: "http://127.0.0.1:8333"), to: "bucket.json")
        let manifest = try workspace.run(["validate", workspace.path("bucket.json")])
        #expect(manifest.status == 2 && manifest.stderr.contains("manifest.path: an s3:// manifest is written with the store of the outputs in its bucket"),
                "\(manifest.stderr)")
    }
}
