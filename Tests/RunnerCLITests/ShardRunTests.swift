import Foundation
import Testing
import TestSupport
import Model

@Suite("One job as N shards", .serialized)
struct ShardRunTests {
    /// A job over 24 distinct sources (hard links of fixture photos) with two outputs.
    func shardedJob(_ workspace: Workspace) throws -> String {
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        let photos = ["photos/friends.jpg", "photos/fig-bowl.jpg", "extra/ladybird.jpg"]
        for index in 0..<24 {
            try FileManager.default.linkItem(atPath: Fixtures.path(photos[index % 3]), toPath: workspace.path("in/\(index).jpg"))
        }
        return try workspace.writeJob("""
        {"version": 1, "name": "sharded",
         "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "out/t/{stem}.jpg",
                      "chain": [{"op": "thumbnail", "width": 48, "height": 48, "fit": "inside"}], "format": {"type": "jpeg"}},
                     {"name": "w", "path": "out/w/{stem}.webp",
                      "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "webp"}}],
         "state": "state/job.sqlite"}
        """)
    }

    func summary(_ result: CommandResult) throws -> [String: Any] {
        try #require(summaryEvent(result.stdout), "\(result.stdout)\n\(result.stderr)")
    }

    @Test("4 shards do every item exactly once, each in its own database; changing N to 3 redoes nothing")
    func shardsCoverTheJobOnce() throws {
        let workspace = try Workspace()
        let job = try shardedJob(workspace)
        // A count without an index would run the whole job into a database no shard reads.
        let noIndex = try workspace.run([job, "--shards", "4"])
        #expect(noIndex.status == 64 && noIndex.stderr.contains("--shards 4 gives the count but no shard index"), "\(noIndex.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state")), "nothing was run")
        var done = 0
        for index in 0..<4 {
            // The index from Kubernetes' environment, the count from RUNNER_SHARDS (or --shards).
            let count = index == 3 ? ["--shards", "4"] : []
            let result = try workspace.run([job, "--log-format", "json"] + count,
                                           environment: ["JOB_COMPLETION_INDEX": "\(index)"].merging(index == 3 ? [:] : ["RUNNER_SHARDS": "4"]) { $1 })
            #expect(result.status == 0, "\(result.stderr)")
            done += try summary(result)["done"] as? Int ?? -1
            #expect(FileManager.default.fileExists(atPath: workspace.path("state/job.shard-\(index)-of-4.sqlite")))
        }
        #expect(done == 48, "every item done exactly once across the shards")
        #expect(workspace.files(in: "out/t").count == 24 && workspace.files(in: "out/w").count == 24)
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state/job.sqlite")), "no shard wrote the whole job's database")
        var perShard = 0
        for index in 0..<4 {
            perShard += try StateDatabase(path: workspace.path("state/job.shard-\(index)-of-4.sqlite")).count(state: "done")
        }
        #expect(perShard == 48)

        // Three shards now: everything is found up to date in the databases of the four.
        for index in 0..<3 {
            let result = try workspace.run([job, "--shard", "\(index)/3", "--log-format", "json"])
            #expect(try summary(result)["done"] as? Int == 0, "shard \(index)/3 redid work")
        }
        // The report reads the job as one: the items of every shard of the latest layout (3, which took over the 4s records), and their runs.
        let report = try workspace.run(["report", job])
        #expect(report.status == 0, "\(report.stderr)")
        let html = try String(contentsOfFile: workspace.path("state/job-report.html"), encoding: .utf8)
        #expect(html.contains("id=\"count-done\"><span class=\"n\">48</span> done"), "the four shards' items together")
        #expect(html.components(separatedBy: "<tr class=\"run\"").count - 1 == 3, "the runs of the latest layout, 3 shards")
        let spread = try workspace.run(["plan", job, "--shards", "4"])
        #expect(spread.stdout.hasPrefix("24 sources over 4 shards"), "\(spread.stdout)")
    }

    @Test("moving an unsharded job to shards: plan and runs find the work done, status and failed answer from the shards")
    func fromOneMachineToShards() throws {
        let workspace = try Workspace()
        let job = try shardedJob(workspace)
        try FileManager.default.copyItem(atPath: Fixtures.path("broken/truncated.jpg"), toPath: workspace.path("in/truncated.jpg"))
        #expect(try workspace.run([job]).status == 1)
        for index in 0..<2 {
            let plan = try workspace.run(["plan", job, "--shard", "\(index)/2"])
            #expect(plan.stdout.hasPrefix("0 to run,"), "a new shard count previews what its run will find: \(plan.stdout)")
            let result = try workspace.run([job, "--shard", "\(index)/2", "--log-format", "json"])
            #expect(result.status == 0)
            #expect(try summary(result)["done"] as? Int == 0)
        }
        // The unsharded database is no longer counted, yet nothing recorded is lost.
        let status = try JSONSerialization.jsonObject(with: Data(try workspace.run(["status", job, "--json"]).stdout.utf8)) as? [String: Any]
        #expect(status?["items"] as? [String: Int] == ["done": 48, "failed": 2], "\(String(describing: status))")
        #expect((status?["shards"] as? [Any])?.count == 2)
        #expect(try workspace.run(["failed", job]).stdout.contains("truncated.jpg -> t: decode"))
    }

    @Test("unblock and prune act on every shard's database, as failed and status read them")
    func operatorToolsSeeEveryShard() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        _ = try shardedJob(workspace)
        // The same job with two URLs the origin answers 404 for, keyed so that each shard blacklists one in its own database.
        let keys = (0..<2).map { shard in (0...).lazy.map { "missing-\($0)" }.first { Shard.index(of: $0, count: 2) == shard }! }
        let job = try workspace.writeJob("""
        {"version": 1, "name": "sharded",
         "sources": [{"path": "in"}, {"url": "\(server.url("/status/404/a.jpg"))", "key": "\(keys[0])"},
                     {"url": "\(server.url("/status/404/b.jpg"))", "key": "\(keys[1])"}],
         "outputs": [{"name": "t", "path": "out/t/{stem}.jpg",
                      "chain": [{"op": "thumbnail", "width": 48, "height": 48, "fit": "inside"}], "format": {"type": "jpeg"}}],
         "state": "state/job.sqlite"}
        """)
        for index in 0..<2 {
            let result = try workspace.run([job, "--shard", "\(index)/2"])
            #expect(result.status == 1, "\(result.stderr)")
        }
        let failed = try workspace.run(["failed", job]).stdout
        #expect(failed.contains("/status/404/a.jpg") && failed.contains("/status/404/b.jpg"), "\(failed)")
        let unblocked = try workspace.run(["unblock", job, "--all"])
        #expect(unblocked.stdout == "2 URLs unblocked\n", "\(unblocked.stdout)\(unblocked.stderr)")
        #expect(try workspace.run(["unblock", job, "--all"]).stdout == "0 URLs unblocked\n")

        // A source that left the job: its output is an orphan in whichever shard recorded it.
        try FileManager.default.removeItem(atPath: workspace.path("in/5.jpg"))
        let listed = try workspace.run(["prune", job])
        #expect(listed.status == 0 && listed.stdout.contains("1 orphaned item, 1 file to delete"), "\(listed.stdout)\(listed.stderr)")
        let pruned = try workspace.run(["prune", job, "--delete"])
        #expect(pruned.stdout.contains("1 orphaned item dropped, 1 file deleted"), "\(pruned.stdout)\(pruned.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("out/t/5.jpg")))
        #expect(workspace.files(in: "out/t").count == 23)
    }

    @Test("a URL blacklisted before the job was sharded stays blocked in its shard: no request, exit 0")
    func blacklistSurvivesResharding() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        let job = try remoteJob(workspace, urls: [server.url("/status/404/a.jpg"), server.url("/img/b.jpg")])
        #expect(try workspace.run([job]).status == 1)
        try server.reset()
        for index in 0..<2 {
            let shard = try workspace.run([job, "--shard", "\(index)/2"])
            #expect(shard.status == 0, "shard \(index)/2: \(shard.stdout)\(shard.stderr)")
        }
        #expect(try server.stats().counts["/status/404/a.jpg"] == nil, "a blacklisted URL gets no request under a new shard count")
    }

    @Test("two sources in different shards that would write one output both fail, each in its own shard; no shard refuses the job")
    func collisionsAcrossShards() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "a")
        try workspace.copyFixtures(["photos/friends.jpg"], to: "b")
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "a"}, {"path": "b"}],
         "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}],
         "state": "state.sqlite"}
        """)
        var failed = 0
        for index in 0..<8 {
            let result = try workspace.run([job, "--shard", "\(index)/8", "--log-format", "json"])
            let count = summaryEvent(result.stdout)?["failed"] as? Int ?? 0
            #expect(result.status == (count > 0 ? 1 : 0), "shard \(index): \(result.stderr)")
            failed += count
        }
        #expect(failed == 2)
    }
}

extension ShardRunTests {
    @Test("a shard's plan holds its own sources, not the job's: 1/64 of 400,000 URLs within 12 MB of 4,000, collisions still found")
    func shardMemoryStaysWithTheShard() throws {
        let workspace = try Workspace()
        for count in [4_000, 400_000] {
            // The first and the last URL write one output: a collision no matter which shards they fall in.
            var lines = ["https://img.example/a/photo.jpg"]
            for index in 1..<count - 1 { lines.append("https://img.example/c/\(index % 97)/p\(index).jpg") }
            lines.append("https://img.example/a/photo.jpg?v=2")
            try (lines.joined(separator: "\n") + "\n").write(toFile: workspace.path("urls\(count).txt"), atomically: true, encoding: .utf8)
            _ = try workspace.writeJob("""
            {"version": 1, "sources": [{"list": "urls\(count).txt"}],
             "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}],
             "state": "state\(count).sqlite"}
            """, name: "job\(count).json")
        }
        // The shard holding the first URL: its item collides with the last one's, wherever that is.
        let shard = "\(Shard.index(of: "https://img.example/a/photo.jpg", count: 64))/64"
        let small = try workspace.runMeasured(["plan", "job4000.json", "--shard", shard, "--json"])
        let large = try workspace.runMeasured(["plan", "job400000.json", "--shard", shard, "--json"])
        for (result, _) in [small, large] {
            #expect(result.status == 0 && result.stdout.contains("\"collisions\" : 1"), "\(result.stdout)\(result.stderr)")
        }
        #expect(small.peakBytes > 0 && large.peakBytes - small.peakBytes < 12_000 << 10, "peak RSS \(small.peakBytes) bytes, then \(large.peakBytes)")
    }
}

@Suite("The Kubernetes example's contract")
struct KubernetesManifestTests {
    @Test("the Indexed Job parses and names what runner relies on: completion index, shard count, retries, exit 2 not retried")
    func indexedJob() throws {
        let manifest = (Fixtures.root as NSString).deletingLastPathComponent + "/deploy/kubernetes/indexed-job.yaml"
        let checked = try python("""
            import sys, yaml
            docs = list(yaml.safe_load_all(open(sys.argv[1])))
            config = next(d for d in docs if d["kind"] == "ConfigMap")
            job = next(d for d in docs if d["kind"] == "Job")
            spec = job["spec"]
            assert spec["completionMode"] == "Indexed"
            assert spec["completions"] == spec["parallelism"] == 16
            assert spec["backoffLimitPerIndex"] >= 1
            rules = spec["podFailurePolicy"]["rules"]
            assert any(r["action"] == "FailIndex" and r["onExitCodes"]["values"] == [2] for r in rules), rules
            assert not any(set(r["onExitCodes"]["values"]) & {75, 124, 1} for r in rules), "75, 124 and 1 retry"
            pod = spec["template"]["spec"]
            container = pod["containers"][0]
            env = {e["name"]: e["value"] for e in container["env"]}
            assert env["RUNNER_SHARDS"] == str(spec["completions"])
            job_file = container["command"][2]
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            volumes = {v["name"]: v for v in pod["volumes"]}
            assert job_file.startswith(mounts["job"]) and volumes["job"]["configMap"]["name"] == config["metadata"]["name"]
            assert "persistentVolumeClaim" in volumes["data"]
            assert job_file.rsplit("/", 1)[1] in config["data"]
            print(config["data"][job_file.rsplit("/", 1)[1]])
            """, [manifest])
        #expect(checked.status == 0, "\(checked.stderr)")
        // The job file the ConfigMap carries is one runner accepts.
        let workspace = try Workspace()
        let job = try workspace.writeJob(checked.stdout)
        let validated = try workspace.run(["plan", job, "--shards", "16"])
        #expect(validated.status == 2 && validated.stderr.contains("/data/photos"), "only the volume is missing here: \(validated.stderr)")
    }
}
