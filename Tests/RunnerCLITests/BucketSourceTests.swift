import Foundation
import Testing
import TestSupport

/// `s3` sources against SeaweedFS started by each test, through the counting proxy of
/// Tests/http-server (which forwards requests as signed), so that what a night sends is counted.
@Suite("Bucket sources")
struct BucketSourceTests {
    static let accessKey = "runnerbucketkey"
    static let secret = "bucket+secret/KEY=x%"
    static let credentials = ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secret, "RUNNER_TEST_LIST_PAGE": "2"]
    /// The objects under originals/ (the text file is left out by the default include, skip.jpg by
    /// the job's exclude), and one outside the prefix.
    static let objects = ["originals/a.jpg", "originals/notes.txt", "originals/skip.jpg", "originals/sub/b.jpg",
                          "originals/with space+plus=%.jpg", "originals/日本/写真.jpg", "other/x.jpg"]
    static let rendered = ["a.webp", "sub/b.webp", "with space+plus=%.webp", "日本/写真.webp"]

    /// SeaweedFS with a bucket holding `objects`, and the proxy in front of it.
    static func store() throws -> (ObjectStoreServer, HTTPTestServer) {
        let server = try ObjectStoreServer.seaweedFS(accessKey: accessKey, secretKey: secret)
        try put(server, Self.objects.map { ($0, Fixtures.path("extra/ladybird.jpg")) }, createBucket: true)
        return (server, try HTTPTestServer(upstream: "127.0.0.1:\(server.port)"))
    }

    /// Uploads (key, file) pairs with boto3: a second client, as a user's own tools would.
    static func put(_ server: ObjectStoreServer, _ objects: [(String, String)], createBucket: Bool = false) throws {
        let result = try server.python("""
            client = boto("s3", sys.argv[1], sys.argv[2])
            if sys.argv[3] == "create": client.create_bucket(Bucket="photos")
            for key, path in zip(sys.argv[4::2], sys.argv[5::2]): client.upload_file(path, "photos", key)
            """, [accessKey, secret, createBucket ? "create" : "-"] + objects.flatMap { [$0.0, $0.1] })
        #expect(result.status == 0, "\(result.stderr)")
    }

    func job(_ workspace: Workspace, endpoint: String, prefix: String = "originals/") throws -> String {
        try workspace.writeJob("""
        {"version": 1, "name": "bucket",
         "sources": [{"s3": "s3://photos/\(prefix)", "endpoint": "\(endpoint)", "exclude": ["skip*"]}],
         "outputs": [{"name": "t", "path": "out/{dir}/{stem}.webp",
                      "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}], "format": {"type": "webp"}}],
         "retry": {"initialDelay": 0.05, "maxDelay": 0.2},
         "state": "state.sqlite"}
        """)
    }

    /// Requests the proxy saw: listing pages (a query on the bucket) and object requests by key path.
    func requests(_ proxy: HTTPTestServer) throws -> (listings: Int, objects: [String: Int], conditional: [String: Int]) {
        let stats = try proxy.stats()
        let objects = stats.counts.filter { !$0.key.contains("?") }
        return (stats.counts.filter { $0.key.contains("?") }.values.reduce(0, +), objects, stats.conditional)
    }

    @Test("listed in pages and fetched once; an unchanged object gets no request beyond the listing, a changed one a conditional GET; no secret in any file")
    func nights() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: proxy.url(""))
        let first = try workspace.run([job], environment: Self.credentials)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.contains("4 done, 0 failed"), "\(first.stdout)")
        #expect(Set(workspace.files(in: "out")) == Set(Self.rendered))
        #expect(first.stderr.contains("object store: credentials from environment, access key ****tkey"), "\(first.stderr)")
        var seen = try requests(proxy)
        #expect(seen.objects.count == 4 && seen.objects.values.allSatisfy { $0 == 1 }, "each object fetched once: \(seen.objects)")

        try proxy.reset()
        let second = try workspace.run([job], environment: Self.credentials)
        #expect(second.status == 0 && second.stdout.contains("0 done, 0 failed, 4 up to date"), "\(second.stdout)\(second.stderr)")
        seen = try requests(proxy)
        // Six keys under the prefix, two a page.
        #expect(seen.listings == 3 && seen.objects.isEmpty, "an unchanged night costs the listing alone: \(seen)")

        let before = try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/a.webp")))
        try Self.put(server, [("originals/a.jpg", Fixtures.path("extra/yellow-flower.jpg"))])
        try proxy.reset()
        let third = try workspace.run([job, "--metrics", workspace.path("job.prom"), "--log-format", "json"], environment: Self.credentials)
        #expect(third.status == 0 && third.stdout.contains("\"done\":1,") && third.stdout.contains("\"upToDate\":3"), "\(third.stdout)\(third.stderr)")
        seen = try requests(proxy)
        #expect(seen.objects == ["/photos/originals/a.jpg": 1] && seen.conditional == ["/photos/originals/a.jpg": 1],
                "the changed object alone, asked for with its cached ETag: \(seen)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/a.webp"))) != before, "the new bytes were rendered")

        let report = try workspace.run(["report", job], environment: Self.credentials)
        #expect(report.status == 0, "\(report.stderr)")
        // Every file the runs wrote: outputs, the state, the originals cache, the metrics, the report.
        #expect(workspace.files(in: ".").contains("job.prom") && workspace.files(in: ".").contains { $0.hasSuffix("report.html") })
        for file in workspace.files(in: ".") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: workspace.path(file)))
            #expect(bytes.range(of: Data(Self.secret.utf8)) == nil, "\(file) holds the secret")
        }
        for text in [first, second, third].flatMap({ [$0.stdout, $0.stderr] }) { #expect(!text.contains(Self.secret)) }
    }

    @Test("a wrong secret stops the run once with what to fix (exit 78), blacklisting nothing; throttling is retried, never blacklisted")
    func refusals() throws {
        let (server, proxy) = try Self.store()
        defer { withExtendedLifetime(server) {} }
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: proxy.url(""))
        var wrong = Self.credentials
        wrong["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        let refused = try workspace.run([job], environment: wrong)
        #expect(refused.status == 78, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("s3://photos/originals/: the object store refused: HTTP 403 SignatureDoesNotMatch")
                && refused.stderr.contains("check AWS_SECRET_ACCESS_KEY"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("not-the-secret"))

        // Listing works, every object answers 503 SlowDown: retried, failed for now, tried next run.
        try proxy.outage("503")
        let throttled = try workspace.run([job], environment: Self.credentials)
        #expect(throttled.status == 1 && throttled.stdout.contains("0 done, 4 failed"), "\(throttled.stdout)\(throttled.stderr)")
        let items = try StateDatabase(path: workspace.path("state.sqlite"))
        let messages = try items.rows("SELECT error_message FROM item").map { $0[0] }
        #expect(messages.allSatisfy { $0.hasPrefix("HTTP 503") && $0.hasSuffix("retried next run)") }, "\(messages)")
        #expect(try items.scalar("SELECT count(*) FROM blacklist") as Int? == 0)
        try proxy.outage("none")
        let back = try workspace.run([job], environment: Self.credentials)
        #expect(back.status == 0 && back.stdout.contains("4 done, 0 failed"), "\(back.stdout)\(back.stderr)")
    }

    @Test("a corrupt object is blacklisted and not fetched again, until it is written again: then it is tried, and unblocked once it renders")
    func replacedAfterBlacklisting() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: proxy.url(""))
        try Self.put(server, [("originals/a.jpg", Fixtures.path("broken/html.jpg"))])
        let broken = try workspace.run([job], environment: Self.credentials)
        #expect(broken.status == 1 && broken.stdout.contains("3 done, 1 failed"), "\(broken.stdout)\(broken.stderr)")
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        #expect(try state.scalar("SELECT count(*) FROM blacklist") as Int? == 1)
        try proxy.reset()
        let blocked = try workspace.run([job], environment: Self.credentials)
        #expect(blocked.stdout.contains("0 done, 0 failed, 3 up to date, 1 blocked"), "\(blocked.stdout)\(blocked.stderr)")
        #expect(try requests(proxy).objects.isEmpty, "a blacklisted object is not fetched")
        // The listing's LastModified may have whole seconds: the new one is a clock tick past the blacklisting.
        Thread.sleep(forTimeInterval: 1.1)
        try Self.put(server, [("originals/a.jpg", Fixtures.path("extra/ladybird.jpg"))])
        let replaced = try workspace.run([job], environment: Self.credentials)
        #expect(replaced.status == 0 && replaced.stdout.contains("1 done, 0 failed, 3 up to date"), "\(replaced.stdout)\(replaced.stderr)")
        #expect(try state.scalar("SELECT count(*) FROM blacklist") as Int? == 0, "unblocked once it rendered")
    }

    @Test("stale-if-error as for HTTP: a changed object whose GET fails for now keeps its outputs from the cached original; rendered once the store answers")
    func staleIfError() throws {
        let (server, proxy) = try Self.store()
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: proxy.url(""))
        #expect(try workspace.run([job], environment: Self.credentials).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/a.webp")))
        try Self.put(server, [("originals/a.jpg", Fixtures.path("extra/yellow-flower.jpg"))])
        try proxy.outage("503")
        let down = try workspace.run([job], environment: Self.credentials)
        #expect(down.status == 0 && down.stdout.contains("0 done, 0 failed, 3 up to date, 1 not revalidated"), "\(down.stdout)\(down.stderr)")
        #expect(down.stderr.contains("its cached originals serve unrevalidated"), "\(down.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/a.webp"))) == before)
        try proxy.outage("none")
        let back = try workspace.run([job], environment: Self.credentials)
        #expect(back.status == 0 && back.stdout.contains("1 done, 0 failed, 3 up to date"), "\(back.stdout)\(back.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/a.webp"))) != before)
    }

    @Test("a Kubernetes service account's web identity: the run says it used it, and its session token signs what moto checks")
    func webIdentity() throws {
        let server = try ObjectStoreServer.moto()
        let workspace = try Workspace()
        try workspace.write("eyJhbGciOiJSUzI1NiJ9.a-projected.service-account-token\n", to: "token")
        let image = Fixtures.path("extra/ladybird.jpg")
        let setup = try server.python("""
            import json
            iam = boto("iam", "any", "any")
            allow = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
            iam.create_role(RoleName="runner", AssumeRolePolicyDocument=allow)
            iam.put_role_policy(RoleName="runner", PolicyName="all", PolicyDocument=allow)
            s3 = boto("s3", "any", "any")
            s3.create_bucket(Bucket="photos")
            for key in ["originals/a.jpg", "originals/b.jpg"]: s3.upload_file(sys.argv[1], "photos", key)
            """, [image])
        try #require(setup.status == 0, "\(setup.stderr)")
        try server.requireSignatures(after: 1)  // the unsigned AssumeRoleWithWebIdentity
        let role = "arn:aws:iam::123456789012:role/runner"
        let environment = ["HOME": workspace.root, "AWS_ROLE_ARN": role, "AWS_WEB_IDENTITY_TOKEN_FILE": workspace.path("token"),
                           "AWS_ENDPOINT_URL_STS": server.endpoint]
        // The bucket's root: moto checks a signed query with `/` in a value (prefix=originals%2F)
        // against another encoding than AWS's, and refuses it; SeaweedFS checks it as AWS does.
        let job = try job(workspace, endpoint: server.endpoint, prefix: "")
        let run = try workspace.run([job], environment: environment)
        #expect(run.status == 0 && run.stdout.contains("2 done, 0 failed"), "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("object store: credentials from web identity (role \(role)), access key ****")
                && run.stderr.contains("with a session token"), "\(run.stderr)")
        #expect(Set(workspace.files(in: "out")) == ["originals/a.webp", "originals/b.webp"])
    }

    @Test("an endpoint without a scheme is a job-file error naming the key, before any request")
    func schemelessEndpoint() throws {
        let workspace = try Workspace()
        let job = try job(workspace, endpoint: "127.0.0.1:9")
        let result = try workspace.run(["validate", job])
        #expect(result.status == 2)
        #expect(result.stderr.contains("sources[0].endpoint: must be the store's URL with its scheme"), "\(result.stderr)")
        // Without an endpoint the region names AWS's host: one that cannot is an error, not a trap.
        try workspace.write(#"{"version": 1, "sources": [{"s3": "s3://photos/", "region": "eu west"}], "outputs": []}"#, to: "aws.json")
        let region = try workspace.run(["validate", workspace.path("aws.json")])
        #expect(region.status == 2 && region.stderr.contains("sources[0].region: makes no AWS host name: \"eu west\""), "\(region.stderr)")
    }
}
