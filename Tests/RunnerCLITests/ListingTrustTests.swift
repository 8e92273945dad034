import Foundation
import Testing
import TestSupport

/// A bucket listing is believed only whole: against the tests' own store (SeaweedFS and moto list
/// honestly), each way a listing can lie stops the night with exit 69 and nothing planned as gone,
/// and `prune --delete` deletes nothing; keys go out exactly as listed and signed so.
@Suite("Listings and keys a store cannot rewrite")
struct ListingTrustTests {
    static let accessKey = "runnerlyingkey"
    static let secret = "lying/secret+KEY"
    static let credentials = ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secret, "RUNNER_TEST_LIST_PAGE": "2"]
    /// Six photos below orig/: three listing pages of two.
    static let photos = ["aitzgorri.jpg", "bird-lamp.png", "fig-bowl.jpg", "friends.jpg", "picos-de-europa.jpg", "wine.webp"]

    static func store(_ keys: [String: String] = Dictionary(uniqueKeysWithValues: photos.map { ("orig/" + $0, Fixtures.path("photos/" + $0)) }))
        throws -> LyingStore {
        try LyingStore(objects: ["photos": keys], accessKey: accessKey, secretKey: secret)
    }

    func job(_ workspace: Workspace, _ store: LyingStore, path: String = "out/{stem}.webp") throws -> String {
        try workspace.writeJob("""
        {"version": 1, "name": "lying",
         "sources": [{"s3": "s3://photos/orig/", "endpoint": "\(store.endpoint)"}],
         "outputs": [{"name": "t", "path": "\(path)", "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "webp"}}],
         "retry": {"attempts": 3, "initialDelay": 0.01, "maxDelay": 0.02},
         "state": "state.sqlite"}
        """)
    }

    @Test("each lie (truncated without a token, a repeated token, a page that is no listing, a key outside the prefix, keys out of order, a page over 8 MiB) fails the night with 69 and prune deletes nothing",
          arguments: ["truncated-no-token", "repeat-token", "garbage", "outside-prefix", "out-of-order", "oversize"])
    func lies(_ lie: String) throws {
        let store = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, store)
        let first = try workspace.run([job], environment: Self.credentials)
        #expect(first.status == 0 && first.stdout.contains("6 done, 0 failed"), "\(first.stdout)\(first.stderr)")
        try store.lie(lie)
        let night = try workspace.run([job], environment: Self.credentials)
        #expect(night.status == 69, "\(lie): \(night.stdout)\(night.stderr)")
        #expect(night.stderr.contains("s3://photos/orig/") && (night.stderr.contains("a listing page") || night.stderr.contains("larger than 8388608 bytes")), "\(night.stderr)")
        #expect(night.stderr.contains("(after 3 attempts)"), "retried as a transient failure: \(night.stderr)")
        for command in [["prune", job], ["prune", job, "--delete"]] {
            let pruned = try workspace.run(command, environment: Self.credentials)
            #expect(pruned.status == 69 && !pruned.stdout.contains("orphan"), "\(command): \(pruned.stdout)\(pruned.stderr)")
        }
        #expect(workspace.files(in: "out").count == 6, "every output stays: \(workspace.files(in: "out"))")
        try store.lie("none")
        let honest = try workspace.run([job], environment: Self.credentials)
        #expect(honest.status == 0 && honest.stdout.contains("0 done, 0 failed, 6 up to date"), "\(honest.stdout)\(honest.stderr)")
    }

    @Test("a lie that passes is retried: the page is asked again and the night runs")
    func passingLie() throws {
        let store = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, store)
        let first = try workspace.run([job], environment: Self.credentials)
        #expect(first.status == 0 && first.stdout.contains("6 done, 0 failed"), "\(first.stdout)\(first.stderr)")
        try store.reset()
        try store.lie("truncated-no-token", times: 1)
        let night = try workspace.run([job], environment: Self.credentials)
        #expect(night.status == 0 && night.stdout.contains("0 done, 0 failed, 6 up to date"), "\(night.stdout)\(night.stderr)")
        let listings = try store.requests().filter { $0.contains("list-type=2") }
        #expect(listings.count == 4 && listings.filter { !$0.contains("continuation-token") }.count == 2, "the first page twice, then two more: \(listings)")
    }

    @Test("keys are sent and signed exactly as listed: dot segments, //, a trailing space, %, + and non-ASCII; an unencoded listing is read as it is")
    func opaqueKeys() throws {
        let photo = Fixtures.path("photos/fig-bowl.jpg")
        let keys = ["orig/a/../evil.jpg", "orig/./dot.jpg", "orig/x//double.jpg", "orig/trailing .jpg", "orig/100%.jpg", "orig/a+b=c.jpg",
                    "orig/été/photo 1.jpg"]
        let store = try Self.store(Dictionary(uniqueKeysWithValues: keys.map { ($0, photo) }))
        for lie in ["none", "raw-keys"] {
            try store.lie(lie)
            try store.reset()
            let workspace = try Workspace()
            let night = try workspace.run([try job(workspace, store, path: "out/{key}.webp")], environment: Self.credentials)
            #expect(night.status == 0 && night.stdout.contains("\(keys.count) done, 0 failed"), "\(lie): \(night.stdout)\(night.stderr)")
            let gets = Set(try store.requests().filter { $0.hasPrefix("GET ") && !$0.contains("list-type") })
            let expected = ["/photos/orig/a/../evil.jpg", "/photos/orig/./dot.jpg", "/photos/orig/x//double.jpg", "/photos/orig/trailing%20.jpg",
                            "/photos/orig/100%25.jpg", "/photos/orig/a%2Bb%3Dc.jpg", "/photos/orig/%C3%A9t%C3%A9/photo%201.jpg"]
            #expect(gets == Set(expected.map { "GET \($0) HTTP/1.1" }), "\(lie): \(gets)")
        }
    }

    @Test("two keys that would write one output (x//a.jpg and x/a.jpg) fail those items, each naming the other, and the rest of the night runs")
    func collidingKeys() throws {
        let photo = Fixtures.path("photos/fig-bowl.jpg")
        let store = try Self.store(["orig/x//a.jpg": photo, "orig/x/a.jpg": photo, "orig/b.jpg": photo])
        let workspace = try Workspace()
        let night = try workspace.run([try job(workspace, store, path: "out/{dir}/{stem}.webp"), "--log-format", "json"], environment: Self.credentials)
        #expect(night.status == 1, "\(night.stdout)\(night.stderr)")
        let failed = itemEvents(night.stdout).filter { $0["state"] as? String == "failed" }
        #expect(failed.count == 2 && failed.allSatisfy { $0["kind"] as? String == "collision" }, "\(failed)")
        let reasons = failed.compactMap { $0["message"] as? String }
        #expect(reasons.contains { $0.hasPrefix("s3://photos/orig/x//a.jpg would write \(workspace.path("out/x/a.webp")) too: add {key}") }
                && reasons.contains { $0.hasPrefix("s3://photos/orig/x/a.jpg would write") }, "\(reasons)")
        #expect(workspace.files(in: "out") == ["b.webp"], "\(workspace.files(in: "out"))")
    }
}

/// What a folder holds is not a job-file error either: one name in two formats under `{stem}` fails
/// those items until one goes, and the rest runs.
@Suite("Sources that would write one output")
struct CollidingSourcesTests {
    @Test("a.jpg and a.png under {stem}.webp: both fail (new, then known), the rest runs; once one goes, the other is made")
    func oneNameTwoFormats() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["formats/photo.avif", "formats/photo.gif", "photos/friends.jpg"], to: "in")
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "out/{stem}.webp", "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "webp"}}],
         "state": "state.sqlite"}
        """)
        let validated = try workspace.run(["validate", job])
        #expect(validated.status == 0 && validated.stderr.contains("in/photo.gif@t will fail: \(workspace.path("in/photo.avif")) would write"),
                "\(validated.stdout)\(validated.stderr)")
        let planned = try workspace.run(["plan", job])
        #expect(planned.stdout.contains("3 to run") && planned.stdout.contains("2 colliding"), "\(planned.stdout)\(planned.stderr)")
        let first = try workspace.run([job])
        #expect(first.status == 1 && first.stdout.contains("1 done, 2 failed"), "\(first.stdout)\(first.stderr)")
        #expect(first.stderr.contains("collision: ") && first.stderr.contains("add {ext} (or {key}) to outputs[0].path"), "\(first.stderr)")
        let second = try workspace.run([job])
        #expect(second.status == 0 && second.stdout.contains("0 done, 0 failed, 1 up to date") && second.stdout.contains("2 known failures"),
                "a standing collision is a known failure: \(second.stdout)\(second.stderr)")
        unlink(workspace.path("in/photo.gif"))
        let third = try workspace.run([job])
        #expect(third.status == 0 && third.stdout.contains("1 done, 0 failed, 1 up to date"), "\(third.stdout)\(third.stderr)")
        #expect(workspace.files(in: "out") == ["friends.webp", "photo.webp"])
    }
}

/// Replaced and skipped `{hash}` objects in a bucket, against the tests' own store (its log keeps
/// the order of requests): the recorded name is what goes, never the template, and only after the
/// manifest that stops naming it is in the bucket.
@Suite("Replaced objects in a bucket")
struct ReplacedObjectTests {
    func job(_ workspace: Workspace, _ store: LyingStore, keep: String) throws -> String {
        try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "hero", "path": "s3://site/img/{stem}-{width}.{hash}.{format}", "endpoint": "\(store.endpoint)",
                      "widths": [64, 128], "formats": ["webp"], "chain": []}],
         "manifest": {"path": "s3://site/images.json"}, "keepReplaced": "\(keep)",
         "retry": {"attempts": 2, "initialDelay": 0.01, "maxDelay": 0.02}, "state": "state.sqlite"}
        """)
    }

    func photo(_ workspace: Workspace, width: Int) throws {
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        try VipsCLI.run("vips", ["thumbnail", Fixtures.path("photos/fig-bowl.jpg"), workspace.path("in/a.png"), "\(width)", "--height", "\(width)", "--size", "force"])
    }

    @Test("a source shrunk under a width: the skipped width's object is kept (no DELETE of a {hash} template); with no grace it goes after the manifest PUT")
    func shrunkAndEdited() throws {
        let store = try LyingStore(objects: [:], accessKey: ListingTrustTests.accessKey, secretKey: ListingTrustTests.secret)
        let workspace = try Workspace()
        try photo(workspace, width: 200)
        let first = try workspace.run([try job(workspace, store, keep: "7d")], environment: ListingTrustTests.credentials)
        #expect(first.status == 0 && first.stdout.contains("2 done"), "\(first.stdout)\(first.stderr)")
        let made = try store.requests().filter { $0.hasPrefix("PUT /site/img/") }
        #expect(made.count == 2, "\(made)")

        // Shrunk to 50 px: 128 is the same bytes as 64 now (skipped), 64 is made anew.
        try photo(workspace, width: 50)
        try store.reset()
        let second = try workspace.run([try job(workspace, store, keep: "7d")], environment: ListingTrustTests.credentials)
        #expect(second.status == 0 && second.stdout.contains("1 done") && second.stdout.contains("1 skipped"), "\(second.stdout)\(second.stderr)")
        var sent = try store.requests()
        #expect(!sent.contains { $0.contains("%7Bhash%7D") || $0.contains("{hash}") }, "no request names the template: \(sent)")
        #expect(!sent.contains { $0.hasPrefix("DELETE ") }, "the replaced objects are kept for keepReplaced: \(sent)")
        let listed = try workspace.run(["prune", try job(workspace, store, keep: "7d")], environment: ListingTrustTests.credentials)
        #expect(listed.stdout.contains("2 replaced files kept (0 past keepReplaced)"), "\(listed.stdout)")

        // No grace: the next run deletes both once its manifest is in the bucket (unchanged here: not sent again).
        try store.reset()
        let third = try workspace.run([try job(workspace, store, keep: "0s")], environment: ListingTrustTests.credentials)
        #expect(third.status == 0, "\(third.stdout)\(third.stderr)")
        sent = try store.requests()
        let deletes = sent.filter { $0.hasPrefix("DELETE /site/img/a-") }
        #expect(deletes.count == 2 && Set(deletes.map { $0.split(separator: " ")[1] }) == Set(made.map { $0.split(separator: " ")[1] }),
                "the two objects of the first night: \(sent)")

        // Edited again: the new objects and manifest go up first, the replaced object after them.
        try photo(workspace, width: 180)
        try store.reset()
        let fourth = try workspace.run([try job(workspace, store, keep: "0s")], environment: ListingTrustTests.credentials)
        #expect(fourth.status == 0 && fourth.stdout.contains("2 done"), "\(fourth.stdout)\(fourth.stderr)")
        sent = try store.requests()
        let manifest = try #require(sent.firstIndex { $0.hasPrefix("PUT /site/images.json") }, "\(sent)")
        let delete = try #require(sent.firstIndex { $0.hasPrefix("DELETE /site/img/a-64.") }, "\(sent)")
        #expect(manifest < delete && sent.filter { $0.hasPrefix("PUT /site/img/") }.allSatisfy { sent.firstIndex(of: $0)! < manifest }, "\(sent)")
    }
}

/// A store that stops accepting writes mid-run: the run gives up once one write failed past its
/// retries, rendering and sending nothing more, and the next run redoes only what it never confirmed.
@Suite("A store that fails mid-run")
struct FailingStoreTests {
    @Test("PUTs answered 503 from the second object on: that one batch is retried, nothing after it is rendered or sent, exit 69; the next run does the rest")
    func outageMidRun() throws {
        let store = try LyingStore(objects: [:], accessKey: ListingTrustTests.accessKey, secretKey: ListingTrustTests.secret)
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        for index in 0..<12 {
            try FileManager.default.copyItem(atPath: Fixtures.path("photos/fig-bowl.jpg"), toPath: workspace.path("in/p\(index).jpg"))
        }
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "s3://site/t/{stem}.webp", "endpoint": "\(store.endpoint)",
                      "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "webp"}}],
         "concurrency": {"process": 1}, "retry": {"attempts": 2, "initialDelay": 0.01, "maxDelay": 0.02}, "state": "state.sqlite"}
        """)
        let pauses = try Pauses("worker.staged", "recorder.uploaded", in: workspace)
        let run = try workspace.start([job], environment: ListingTrustTests.credentials.merging(pauses.environment) { $1 })
        var staged = Set<String>()
        // The first output staged, then confirmed by the store; the recorder holds there while the outage begins.
        for paused in pauses.wait(for: "worker.staged", of: run) { staged.insert(paused.subject); pauses.release(paused) }
        let uploaded = try #require(pauses.wait(for: "recorder.uploaded", of: run).first, "\(run.stderrSoFar)")
        try store.lie("outage")
        try store.reset()
        pauses.release(uploaded)
        // The second output goes to the recorder, whose PUT fails past its retries; the worker holds
        // at the next output it stages until the run says it stops, then goes on with what it holds.
        for paused in pauses.wait(for: "worker.staged", of: run) { staged.insert(paused.subject); pauses.release(paused) }
        #expect(run.waitUntil { run.stderrSoFar.contains("stopping") }, "\(run.stderrSoFar)")
        while run.process.isRunning {
            for paused in pauses.wait(for: "worker.staged", of: run, timeout: 1) { staged.insert(paused.subject); pauses.release(paused) }
        }
        let result = run.wait()
        #expect(result.status == 69, "\(result.stdout)\(result.stderr)")
        let puts = try store.requests().filter { $0.hasPrefix("PUT ") }
        #expect(Set(puts).count == 1 && puts.count == 2, "one object, tried twice; nothing after it sent: \(puts) \(result.stderr)")
        // The first two, and at most the two a worker holds (one rendering, one queued in its pipe).
        #expect(staged.count <= 4, "rendered after the store failed: \(staged.sorted()) \(result.stdout) \(result.stderr)")
        try store.lie("none")
        let next = try workspace.run([job], environment: ListingTrustTests.credentials)
        #expect(next.status == 0 && next.stdout.contains("11 done, 0 failed, 1 up to date"), "\(next.stdout)\(next.stderr)")
    }
}

/// The state in a bucket against the tests' own store: a conditional write whose answer is lost,
/// and a clock that is off.
@Suite("State writes a store can confuse")
struct StateWriteTests {
    func job(_ workspace: Workspace, _ store: LyingStore) throws -> String {
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        try? FileManager.default.copyItem(atPath: Fixtures.path("photos/fig-bowl.jpg"), toPath: workspace.path("in/fig-bowl.jpg"))
        return try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "out/{stem}.webp", "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "webp"}}],
         "stateBucket": {"s3": "s3://state/runner/", "endpoint": "\(store.endpoint)"},
         "retry": {"attempts": 3, "initialDelay": 0.01, "maxDelay": 0.02}, "state": "state.sqlite"}
        """)
    }

    @Test("a conditional PUT (the lease, the state) that landed but whose answer was lost is recognised, not taken for another writer's")
    func lostAnswer() throws {
        let store = try LyingStore(objects: [:], accessKey: ListingTrustTests.accessKey, secretKey: ListingTrustTests.secret)
        let workspace = try Workspace()
        try store.lie("drop-put", times: 2)
        let night = try workspace.run([try job(workspace, store)], environment: ListingTrustTests.credentials)
        #expect(night.status == 0 && night.stdout.contains("1 done"), "\(night.stdout)\(night.stderr)")
        let sent = try store.requests()
        #expect(sent.filter { $0.hasPrefix("HEAD /state/runner/state.sqlite") }.count == 2, "the lease and the state checked once each: \(sent)")
        // The local copy gone (a pod's empty disk, its outputs kept): the bucket's copy says done.
        for leftover in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "state.sqlite.bucket-etag"] { unlink(workspace.path(leftover)) }
        let again = try workspace.run([try job(workspace, store)], environment: ListingTrustTests.credentials)
        #expect(again.status == 0 && again.stdout.contains("0 done, 0 failed, 1 up to date"), "the state landed: \(again.stdout)\(again.stderr)")
    }

    @Test("a store whose clock is 20 minutes ahead refuses the run (78) and runner names the offset")
    func clockSkew() throws {
        let store = try LyingStore(objects: [:], accessKey: ListingTrustTests.accessKey, secretKey: ListingTrustTests.secret)
        let workspace = try Workspace()
        try store.lie("skewed")
        let night = try workspace.run([try job(workspace, store)], environment: ListingTrustTests.credentials)
        #expect(night.status == 78, "\(night.stdout)\(night.stderr)")
        #expect(night.stderr.contains("RequestTimeTooSkewed: this machine's clock is 1200 s behind the store's")
                || night.stderr.contains("RequestTimeTooSkewed: this machine's clock is 1199 s behind the store's"), "\(night.stderr)")
    }
}

extension FailingStoreTests {
    @Test("a store's Retry-After is honoured as an origin's is: the second PUT waits the second it asks, whatever the job's shorter backoff")
    func retryAfter() throws {
        let store = try LyingStore(objects: [:], accessKey: ListingTrustTests.accessKey, secretKey: ListingTrustTests.secret)
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/fig-bowl.jpg"], to: "in")
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "s3://site/t/{stem}.webp", "endpoint": "\(store.endpoint)",
                      "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "webp"}}],
         "retry": {"attempts": 2, "initialDelay": 0.01, "maxDelay": 5}, "state": "state.sqlite"}
        """)
        try store.lie("outage-retry-after")
        let run = try workspace.run([job], environment: ListingTrustTests.credentials)
        #expect(run.status == 69, "\(run.stdout)\(run.stderr)")
        let puts = try store.timedRequests().filter { $0.line.hasPrefix("PUT ") }
        #expect(puts.count == 2 && puts[1].time - puts[0].time >= 1, "\(puts)")
    }
}

extension FailingStoreTests {
    @Test("a multipart upload whose parts and abort fail: the run stops (69) naming the upload id left in the store")
    func failedAbort() throws {
        let store = try LyingStore(objects: [:], accessKey: ListingTrustTests.accessKey, secretKey: ListingTrustTests.secret)
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        // Noise does not compress: its PNG is over the 5 MiB part size.
        try VipsCLI.run("vips", ["gaussnoise", workspace.path("in/noise.png"), "2600", "2600"])
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"path": "in"}],
         "outputs": [{"name": "t", "path": "s3://site/t/{stem}.png", "endpoint": "\(store.endpoint)", "partSize": 5242880,
                      "chain": [], "format": {"type": "png", "compression": 0}}],
         "retry": {"attempts": 2, "initialDelay": 0.01, "maxDelay": 0.02}, "state": "state.sqlite"}
        """)
        try store.lie("fail-multipart")
        let run = try workspace.run([job], environment: ListingTrustTests.credentials)
        #expect(run.status == 69, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("HTTP 500 InternalError (after 2 attempts); aborting multipart upload upload-0 failed too") && run.stderr.contains("lifecycle rule"),
                "\(run.stderr)")
    }
}
