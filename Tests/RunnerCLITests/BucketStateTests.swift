import Foundation
import Testing
import TestSupport

/// A shard's state database kept in a bucket (`stateBucket`), as a Kubernetes pod with no
/// persistent volume runs: each workspace here is a pod's empty disk, SeaweedFS the bucket.
@Suite("State in a bucket")
struct BucketStateTests {
    static let credentials = BucketSourceTests.credentials
    static let stateKey = "runner-state/site.shard-1-of-2.sqlite"

    func job(_ workspace: Workspace, endpoint: String, checkpoint: Int = 300) throws -> String {
        try workspace.writeJob("""
        {"version": 1, "name": "site",
         "sources": [{"path": "\(Fixtures.path("photos"))", "recursive": true}],
         "outputs": [{"name": "t", "path": "s3://site/thumbs/{dir}/{stem}.webp", "endpoint": "\(endpoint)",
                      "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}], "format": {"type": "webp"}}],
         "stateBucket": {"s3": "s3://site/runner-state/", "endpoint": "\(endpoint)", "checkpoint": \(checkpoint)},
         "concurrency": {"process": 1},
         "retry": {"initialDelay": 0.05, "maxDelay": 0.2},
         "state": "state/site.sqlite"}
        """)
    }

    /// The items recorded done in the bucket's copy of shard `shard` of 2's database, nil while there is none.
    func doneInBucket(_ server: ObjectStoreServer, _ workspace: Workspace, shard: Int) throws -> Int? {
        let copy = workspace.path("fetched.sqlite")
        let fetched = try server.python("""
            import botocore.exceptions
            try: boto("s3", sys.argv[1], sys.argv[2]).download_file("site", sys.argv[3], sys.argv[4])
            except botocore.exceptions.ClientError: sys.exit(3)
            """, [BucketSourceTests.accessKey, BucketSourceTests.secret, "runner-state/site.shard-\(shard)-of-2.sqlite", copy])
        guard fetched.status == 0 else { return nil }
        return try StateDatabase(path: copy).count(state: "done")
    }

    @Test("a pod with an empty disk fetches its shard's state and finds everything up to date, sending no request for any output")
    func emptyDiskPicksUp() throws {
        let (server, proxy) = try BucketOutputTests.store()
        let first = try Workspace(), second = try Workspace()
        var done = 0
        for shard in ["0/2", "1/2"] {
            let run = try first.run([try job(first, endpoint: proxy.url("")), "--shard", shard, "--log-format", "json"], environment: Self.credentials)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            done += (try #require(summaryEvent(run.stdout))["done"] as? Int) ?? 0
        }
        #expect(done == 8)
        try proxy.reset()
        for shard in ["0/2", "1/2"] {
            let run = try second.run([try job(second, endpoint: proxy.url("")), "--shard", shard], environment: Self.credentials)
            #expect(run.status == 0 && run.stdout.contains("0 done, 0 failed"), "\(run.stdout)\(run.stderr)")
        }
        let sent = try proxy.stats().methods
        // The state, its leases, and a listing of the state folder for the job's other layouts.
        #expect(sent.keys.allSatisfy { $0.contains("/site/runner-state/") || $0.contains("prefix=runner-state%2F") }, "\(sent)")
        let state = sent.filter { !$0.key.contains(".lease") && !$0.key.contains("list-type") }
        #expect(state.filter { $0.key.hasPrefix("GET ") }.count == 2 && state.filter { $0.key.hasPrefix("PUT ") }.count == 2, "\(sent)")
        withExtendedLifetime(server) {}
    }

    @Test("two runs of one shard: the second finds the first's lease and stops at once with exit 75, having sent no output; the first's state stands")
    func secondRunStopsAtOnce() throws {
        let (server, proxy) = try BucketOutputTests.store()
        let slow = try Workspace(), fast = try Workspace(), later = try Workspace()
        let pauses = try Pauses("worker.task", in: slow)
        let held = try slow.start([try job(slow, endpoint: proxy.url("")), "--shard", "1/2"], environment: Self.credentials.merging(pauses.environment) { $1 })
        // Held with its lease taken, its state fetched (there was none) and its first source in hand.
        #expect(pauses.wait(for: "worker.task", of: held).count == 1, "\(held.stdoutSoFar)\(held.stderrSoFar)")
        try proxy.reset()
        let second = try fast.run([try job(fast, endpoint: proxy.url("")), "--shard", "1/2"], environment: Self.credentials)
        #expect(second.status == 75, "\(second.stdout)\(second.stderr)")
        #expect(second.stderr.contains("s3://site/\(Self.stateKey).lease: another run of this shard (") && second.stderr.contains("holds its state until"),
                "\(second.stderr)")
        let sent = try proxy.stats().methods
        #expect(sent.keys.allSatisfy { $0.contains(".lease") }, "only the lease was asked about: \(sent)")
        #expect(fast.files(in: ".") == ["job.json"], "nothing written beside the job, not even a lock file: \(fast.files(in: "."))")
        try pauses.releaseAll()
        let first = held.wait()
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let picked = try later.run([try job(later, endpoint: proxy.url("")), "--shard", "1/2"], environment: Self.credentials)
        #expect(picked.status == 0 && picked.stdout.contains("0 done, 0 failed"), "the first's records stand: \(picked.stdout)\(picked.stderr)")
        withExtendedLifetime(server) {}
    }

    @Test("a shard run on an empty disk finds the work the unsharded run recorded: the job's other layout comes from the bucket too")
    func otherLayoutFromTheBucket() throws {
        let (server, proxy) = try BucketOutputTests.store()
        let pod = try Workspace(), shard = try Workspace()
        let night = try pod.run([try job(pod, endpoint: proxy.url(""))], environment: Self.credentials)
        #expect(night.status == 0 && night.stdout.contains("8 done"), "\(night.stdout)\(night.stderr)")
        for index in 0..<2 {
            let sharded = try shard.run([try job(shard, endpoint: proxy.url("")), "--shard", "\(index)/2"], environment: Self.credentials)
            #expect(sharded.status == 0 && sharded.stdout.contains("0 done, 0 failed") && !sharded.stdout.contains(" 0 up to date"),
                    "shard \(index)/2: \(sharded.stdout)\(sharded.stderr)")
        }
        withExtendedLifetime(server) {}
    }

    @Test("with no local copy, status, plan, failed and prune read the bucket's state and write nothing here; prune --delete pushes its change back")
    func commandsReadTheBucket() throws {
        let (server, proxy) = try BucketOutputTests.store()
        let pod = try Workspace(), laptop = try Workspace(), other = try Workspace()
        let night = try pod.run([try job(pod, endpoint: proxy.url(""))], environment: Self.credentials)
        #expect(night.status == 0 && night.stdout.contains("8 done"), "\(night.stdout)\(night.stderr)")
        let job = try job(laptop, endpoint: proxy.url(""))
        let status = try laptop.run(["status", job], environment: Self.credentials)
        #expect(status.status == 0 && status.stdout.contains("8 done") && status.stdout.contains("(s3://site/runner-state/site.sqlite)"),
                "the state named where it is kept: \(status.stdout)\(status.stderr)")
        let plan = try laptop.run(["plan", job], environment: Self.credentials)
        #expect(plan.stdout.contains("0 to run, 0 to revalidate, 8 up to date"), "\(plan.stdout)\(plan.stderr)")
        let failed = try laptop.run(["failed", job], environment: Self.credentials)
        #expect(failed.status == 0 && !failed.stdout.contains("has not run"), "\(failed.stdout)\(failed.stderr)")
        let pruned = try laptop.run(["prune", job], environment: Self.credentials)
        #expect(pruned.stdout.contains("0 orphaned items"), "\(pruned.stdout)\(pruned.stderr)")
        #expect(laptop.files(in: ".") == ["job.json"], "nothing written here: \(laptop.files(in: "."))")
        // The report is the one thing asked for: beside where the job's state would be, and it stays.
        let report = try laptop.run(["report", job], environment: Self.credentials)
        #expect(report.status == 0 && report.stdout == laptop.path("state/site-report.html") + "\n", "\(report.stdout)\(report.stderr)")
        #expect(FileManager.default.fileExists(atPath: laptop.path("state/site-report.html")))
        #expect(try String(contentsOfFile: laptop.path("state/site-report.html"), encoding: .utf8).contains("s3://site/runner-state/site.sqlite"))
        // The output renamed: its 8 items are orphans; prune --delete deletes their objects and the bucket's state drops them.
        let renamed = try laptop.writeJob(try String(contentsOfFile: job, encoding: .utf8).replacingOccurrences(of: #""name": "t""#, with: #""name": "u""#)
            .replacingOccurrences(of: "thumbs/", with: "small/"))
        let deleted = try laptop.run(["prune", renamed, "--delete"], environment: Self.credentials)
        #expect(deleted.status == 0 && deleted.stdout.contains("8 orphaned items dropped, 8 files deleted"), "\(deleted.stdout)\(deleted.stderr)")
        let seen = try other.run(["prune", try other.writeJob(try String(contentsOfFile: renamed, encoding: .utf8))], environment: Self.credentials)
        #expect(seen.stdout.contains("0 orphaned items"), "the bucket's state was changed: \(seen.stdout)\(seen.stderr)")
        withExtendedLifetime(server) {}
    }

    @Test("a pod killed between checkpoints: the next pod resumes from the last checkpoint, redoing only what came after it")
    func killAfterCheckpoint() throws {
        let (server, proxy) = try BucketOutputTests.store()
        let killed = try Workspace(), next = try Workspace()
        // A shard's photos, in plan order: hold the worker at its last source. Which shard a photo falls in
        // hashes its path, so where the clone lives decides: the test takes a shard holding at least two.
        var shard = 0, sources: [String] = [], listings = ""
        for index in 1...2 where sources.count < 2 {
            let planned = try killed.run(["plan", try job(killed, endpoint: proxy.url("")), "--shard", "\(index)/2", "--list"],
                                         environment: Self.credentials)
            // `pending<TAB>SOURCE@OUTPUT<TAB>PATH`: the sources' file names.
            sources = planned.stdout.split(separator: "\n").compactMap { line -> String? in
                let fields = line.split(separator: "\t")
                return fields.count == 3 ? ((String(fields[1].prefix { $0 != "@" }) as NSString).lastPathComponent) : nil
            }
            (shard, listings) = (index, listings + planned.stdout + planned.stderr)
        }
        try #require(sources.count >= 2, "\(listings)")
        let last = sources.last!
        let pauses = try Pauses("worker.task@\(last)", in: killed)
        let run = try killed.start([try job(killed, endpoint: proxy.url(""), checkpoint: 1), "--shard", "\(shard)/2"],
                                   environment: Self.credentials.merging(pauses.environment) { $1 })
        #expect(pauses.wait(for: "worker.task", of: run).count == 1, "\(run.stdoutSoFar)\(run.stderrSoFar)")
        let before = sources.count - 1
        #expect(eventually(timeout: 60) { (try? doneInBucket(server, killed, shard: shard)) == before }, "a checkpoint carried the \(before) items done")
        run.signal(SIGKILL)
        _ = run.wait()
        let resumed = try next.run([try job(next, endpoint: proxy.url("")), "--shard", "\(shard)/2"], environment: Self.credentials)
        #expect(resumed.status == 0 && resumed.stdout.contains("1 done, 0 failed, \(before) up to date"), "\(resumed.stdout)\(resumed.stderr)")
    }

    @Test("the Kubernetes example without a shared volume runs as written, shard by shard on empty disks, with SeaweedFS for AWS")
    func kubernetesExample() throws {
        let (server, proxy) = try BucketOutputTests.store()
        let manifest = (Fixtures.root as NSString).deletingLastPathComponent + "/deploy/kubernetes/indexed-job-bucket.yaml"
        let photos = BucketOutputTests.photos.map { ($0, Fixtures.path("photos/\($0)") + (["bird-lamp": ".png", "wine": ".webp"][$0] ?? ".jpg")) }
        let checked = try server.python("""
            import yaml
            docs = list(yaml.safe_load_all(open(sys.argv[3])))
            config = next(d for d in docs if d["kind"] == "ConfigMap")
            spec = next(d for d in docs if d["kind"] == "Job")["spec"]
            pod = spec["template"]["spec"]
            assert next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"] == pod["serviceAccountName"]
            assert not any("persistentVolumeClaim" in v for v in pod["volumes"]), "no shared volume"
            work = next(v for v in pod["volumes"] if "emptyDir" in v)["name"]
            container = pod["containers"][0]
            assert next(m for m in container["volumeMounts"] if m["name"] == work)["mountPath"] == "/var/lib/runner"
            rules = spec["podFailurePolicy"]["rules"]
            assert [r["onExitCodes"]["values"] for r in rules if r["action"] == "FailIndex"] == [[2, 78]], rules
            s3 = boto("s3", sys.argv[1], sys.argv[2])
            s3.create_bucket(Bucket="example-photos")
            s3.create_bucket(Bucket="example-site")
            for key, path in zip(sys.argv[4::2], sys.argv[5::2]): s3.upload_file(path, "example-photos", "originals/" + key)
            print(config["data"]["thumbs.json"])
            """, [BucketSourceTests.accessKey, BucketSourceTests.secret, manifest] + photos.flatMap { [$0.0 + ".jpg", $0.1] })
        try #require(checked.status == 0, "\(checked.stderr)")
        // A pod per index on a fresh disk, twice: the second night's pods find everything done.
        for pod in ["first", "second"] {
            let workspace = try Workspace()
            let text = checked.stdout.replacingOccurrences(of: #""https://s3.eu-west-1.amazonaws.com", "addressing": "virtual""#,
                                                           with: #""\#(proxy.url(""))", "addressing": "path""#)
                .replacingOccurrences(of: "/var/lib/runner", with: workspace.path("pod"))
            let job = try workspace.writeJob(text)
            var done = 0
            for index in ["0", "1"] {
                let run = try workspace.run([job, "--log-format", "json"],
                                            environment: Self.credentials.merging(["RUNNER_SHARDS": "2", "JOB_COMPLETION_INDEX": index]) { $1 })
                #expect(run.status == 0, "\(pod) pod, index \(index): \(run.stdout)\(run.stderr)")
                done += (summaryEvent(run.stdout)?["done"] as? Int) ?? -100
            }
            #expect(done == (pod == "first" ? 8 : 0), "\(pod) pods: \(done) done")
        }
        let listed = try server.python("""
            s3 = boto("s3", sys.argv[1], sys.argv[2])
            print("\\n".join(o["Key"] for o in s3.list_objects_v2(Bucket="example-site")["Contents"]))
            """, [BucketSourceTests.accessKey, BucketSourceTests.secret])
        let keys = Set(listed.stdout.split(separator: "\n").map(String.init))
        #expect(keys.isSuperset(of: BucketOutputTests.photos.map { "thumbs/\($0).webp" }), "\(keys)")
        #expect(keys.isSuperset(of: ["runner-state/thumbs.shard-0-of-2.sqlite", "runner-state/thumbs.shard-1-of-2.sqlite",
                                     "thumbs.shard-0-of-2.json", "thumbs.shard-1-of-2.json"]), "\(keys)")
    }
}
