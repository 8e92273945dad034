import Foundation
import Testing
import TestSupport

/// A job over `urls` (written to a list file) with one thumbnail output; short retry delays.
@discardableResult
func remoteJob(_ workspace: Workspace, urls: [String], extra: String = "") throws -> String {
    try workspace.write(urls.joined(separator: "\n") + "\n", to: "urls.txt")
    return try workspace.writeJob("""
    {"version": 1, "name": "remote",
     "sources": [{"list": "urls.txt"}],
     "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg",
                  "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}],
                  "format": {"type": "jpeg"}}],
     "retry": {"initialDelay": 0.05, "maxDelay": 2},
     "state": "state.sqlite"\(extra)}
    """)
}

/// Item states and error messages, by the URL path of their source.
func itemsByPath(_ workspace: Workspace) throws -> [String: (state: String, kind: String?, message: String?)] {
    let database = try StateDatabase(path: workspace.path("state.sqlite"))
    var result: [String: (String, String?, String?)] = [:]
    for (key, state) in try database.states() {
        let path = URL(string: String(key.prefix { $0 != "@" }))?.path ?? key
        let kind: String? = try database.scalar("SELECT error_kind FROM item WHERE key = ?", [key])
        let message: String? = try database.scalar("SELECT error_message FROM item WHERE key = ?", [key])
        result[path] = (state, kind, message)
    }
    return result
}

@Suite("HTTP(S) sources")
struct RemoteSourceTests {
    @Test("each failure class ends in the right state; permanent ones are blacklisted and get no request next run")
    func failureClasses() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let permanent = ["/status/404/a.jpg", "/status/410/b.jpg", "/html/c.jpg", "/loop/d.jpg", "/ftp/e.jpg",
                         "/big/f.jpg", "/corrupt/g.jpg"]
        let transient = ["/status/500/h.jpg", "/short/i.jpg", "/hang/j.jpg"]
        let good = ["/img/k.jpg", "/redirect/3/l.jpg", "/wrongtype/m.jpg", "/flaky/2/n.jpg"]
        let job = try remoteJob(workspace, urls: (permanent + transient + good).map(server.url),
                                extra: #", "http": {"timeout": 2}, "limits": {"maxDownloadBytes": 1000000}"#)
        let first = try workspace.run([job])
        #expect(first.status == 1, "\(first.stderr)")
        #expect(first.stdout.contains("4 done, 10 failed"), "\(first.stdout)")
        let items = try itemsByPath(workspace)
        for path in good { #expect(items[path]?.state == "done", "\(path): \(String(describing: items[path]))") }
        for path in permanent + transient { #expect(items[path]?.state == "failed", "\(path)") }
        #expect(items["/status/404/a.jpg"]?.message == "HTTP 404 (blacklisted)")
        #expect(items["/html/c.jpg"]?.message?.hasPrefix("not an image (Content-Type text/html)") == true)
        #expect(items["/big/f.jpg"]?.message?.hasPrefix("larger than limits.maxDownloadBytes") == true)
        #expect(items["/loop/d.jpg"]?.message?.hasPrefix("too many redirects") == true)
        // Passed the download checks, then failed in the decoder: the image's own failure.
        #expect(items["/corrupt/g.jpg"]?.kind == "decode")
        #expect(items["/status/500/h.jpg"]?.message == "HTTP 500 (after 3 attempts; retried next run)")
        #expect(items["/hang/j.jpg"]?.message?.contains("retried next run") == true)
        #expect(items["/short/i.jpg"]?.message?.hasPrefix("body shorter than announced") == true)
        let stats = try server.stats()
        #expect(stats.counts["/status/500/h.jpg"] == 3, "transient failures are retried retry.attempts times")
        #expect(stats.counts["/status/404/a.jpg"] == 1, "permanent failures are not retried")
        #expect(stats.counts["/flaky/2/n.jpg"] == 3)
        #expect(stats.headers["/img/k.jpg"]?["User-Agent"]?.hasPrefix("runner/") == true)
        // An HTML page is never an output.
        #expect(!workspace.files(in: "out").contains { $0.contains("c.jpg") })

        // The hung URL has said all it had to: the later runs leave it out rather than wait out its timeouts again.
        try remoteJob(workspace, urls: (permanent + transient.dropLast() + good).map(server.url),
                      extra: #", "limits": {"maxDownloadBytes": 1000000}"#)
        try server.reset()
        let second = try workspace.run([job])
        #expect(second.status == 1)
        #expect(second.stdout.contains("7 blocked"), "\(second.stdout)")
        let again = try server.stats()
        // A body that passed the download checks but does not decode is bad image data: blacklisted too.
        for path in permanent {
            #expect(again.counts[path] == nil, "\(path) is blacklisted and must get no request")
        }
        #expect(again.counts["/status/500/h.jpg"] == 3, "transient failures are never blacklisted")

        let failed = try workspace.run(["failed", job])
        #expect(failed.stdout.contains("blocked: \(server.url("/status/404/a.jpg")): HTTP 404 (first failed "))

        // --retry-failed asks again; unblock takes URLs off the list.
        try server.reset()
        _ = try workspace.run([job, "--retry-failed"])
        #expect(try server.stats().counts["/status/404/a.jpg"] == 1)
        let unblock = try workspace.run(["unblock", job, server.url("/status/404/a.jpg")])
        #expect(unblock.stdout.contains("1 URL unblocked"))
        #expect(try workspace.run(["unblock", job, "--all"]).stdout.contains("6 URLs unblocked"))
        try server.reset()
        _ = try workspace.run([job])
        #expect(try server.stats().counts["/status/410/b.jpg"] == 1)
    }

    @Test("a blacklisted URL's kind says which limit it met: the download's bytes or the image's pixels")
    func blacklistKinds() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: ["/big/f.jpg", "/img/k.jpg"].map(server.url),
                                extra: #", "limits": {"maxDownloadBytes": 1000000, "maxPixels": 100}"#)
        #expect(try workspace.run([job]).status == 1)
        let failed = try workspace.run(["failed", job, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(failed.stdout.utf8)) as? [String: Any])
        let blocked = try #require(object["blocked"] as? [[String: Any]], "\(failed.stdout)")
        let kinds = Dictionary(uniqueKeysWithValues: blocked.map { entry -> (String, String) in
            (entry["url"] as? String ?? "", entry["kind"] as? String ?? "none")
        })
        // Both were once `too-large`: the download's limit and the item failure kind read as one.
        #expect(kinds == [server.url("/big/f.jpg"): "download-too-large", server.url("/img/k.jpg"): "too-large"], "\(failed.stdout)")
        let report = try workspace.run(["report", job])
        let html = try String(contentsOfFile: report.stdout.trimmingCharacters(in: .newlines), encoding: .utf8)
        #expect(html.contains("<td>download-too-large</td>") && html.contains("<td>too-large</td>"))
    }

    @Test("a URL's file and folder names are percent-decoded once: %25, %252e, %2F and non-ASCII names")
    func decodedOnce() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: ["/img/100%25.jpg", "/img/x%252e.jpg", "/img/a%2Fb.jpg", "/img/caf%C3%A9.jpg",
                                                  "/img/%E6%9D%B1%E4%BA%AC/%E5%A1%94%2541.jpg"].map(server.url))
        let run = try workspace.run([job, "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        let host = "127.0.0.1_\(server.port)/img/"
        // Before, 100%25 decoded to nothing ("index"), %252e to a dot, and a%2Fb became folder a, file b.
        #expect(workspace.files(in: "out") == ["100%.jpg", "a_b.jpg", "café.jpg", "x%2e.jpg", "東京/塔%41.jpg"].map { host + $0 }.sorted(),
                "\(workspace.files(in: "out"))")
    }

    @Test("a second run with unchanged sources sends only conditional requests and re-encodes nothing")
    func revalidation() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg"), server.url("/img/b.jpg")])
        #expect(try workspace.run([job]).stdout.contains("2 done"))
        let before = workspace.modificationDate("out/127.0.0.1_\(server.port)/img/a.jpg")
        try server.reset()
        // The run's first line counts its items in the words `runner plan` uses.
        let plan = try workspace.run(["plan", job])
        #expect(plan.stdout.hasPrefix("0 to run, 2 to revalidate, 0 up to date, 0 blocked, 0 orphaned"), "\(plan.stdout)")
        let second = try workspace.run([job])
        #expect(second.status == 0)
        #expect(second.stderr.contains("Z remote: 0 to run, 2 to revalidate, 0 up to date, 0 blocked\n"), "\(second.stderr)")
        #expect(second.stdout.contains("0 done, 0 failed, 2 up to date"), "\(second.stdout)")
        let stats = try server.stats()
        #expect(stats.counts["/img/a.jpg"] == 1 && stats.conditional["/img/a.jpg"] == 1)
        #expect(stats.headers["/img/a.jpg"]?["If-None-Match"] == "\"v1\"")
        #expect(workspace.modificationDate("out/127.0.0.1_\(server.port)/img/a.jpg") == before)

        // revalidate "never": no request at all while the cached original exists.
        let never = try String(contentsOfFile: job, encoding: .utf8)
            .replacingOccurrences(of: "\"state\"", with: "\"http\": {\"revalidate\": \"never\"}, \"state\"")
        try workspace.writeJob(never)
        try server.reset()
        #expect(try workspace.run([job]).stdout.contains("2 up to date"))
        #expect(try server.stats().counts.isEmpty)
    }

    @Test("--download-only fills the originals cache and writes nothing; the next run processes without a full fetch")
    func downloadOnly() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg"), server.url("/img/b.jpg")],
                                extra: #", "http": {"revalidate": "1h"}"#)
        let fetch = try workspace.run([job, "--download-only"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout.contains("0 done") && fetch.stdout.contains("2 not started"), "\(fetch.stdout)")
        #expect(workspace.files(in: "out").isEmpty)
        #expect(try server.stats().counts["/img/a.jpg"] == 1)
        #expect(try StateDatabase(path: workspace.path("state.sqlite")).scalar("SELECT count(*) FROM original") == 2)

        try server.reset()
        let process = try workspace.run([job])
        #expect(process.stdout.contains("2 done"), "\(process.stdout)")
        #expect(try server.stats().counts.isEmpty, "fresh originals are not fetched again")
        #expect(workspace.files(in: "out").count == 2)
    }

    @Test("a URL listed twice, with two outputs, is downloaded once")
    func requestCombining() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        try workspace.write([server.url("/nocache/a.jpg"), server.url("/nocache/a.jpg"), server.url("/nocache/a.jpg#x")]
            .joined(separator: "\n"), to: "urls.txt")
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"list": "urls.txt"}, {"url": "\(server.url("/nocache/a.jpg"))", "key": "product-1"}],
         "outputs": [
           {"name": "small", "path": "out/{key}-s.jpg", "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "jpeg"}},
           {"name": "large", "path": "out/{key}-l.png", "chain": [{"op": "grayscale"}], "format": {"type": "png"}}],
         "state": "state.sqlite"}
        """)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("4 done"), "two sources (URL key and explicit key) x two outputs: \(result.stdout)")
        #expect(try server.stats().counts["/nocache/a.jpg"] == 1)
        #expect(workspace.files(in: "out").count == 4)
    }

    @Test("a URL named again after its download finished reuses that download")
    func requestCombiningAcrossTheList() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        // One transfer at a time: the explicit-key source is read only after a.jpg is settled.
        try workspace.write([server.url("/nocache/a.jpg"), server.url("/nocache/b.jpg")].joined(separator: "\n"), to: "urls.txt")
        let job = try workspace.writeJob("""
        {"version": 1, "sources": [{"list": "urls.txt"}, {"url": "\(server.url("/nocache/a.jpg"))", "key": "product-1"}],
         "outputs": [{"name": "t", "path": "out/{key}.jpg", "chain": [{"op": "thumbnail", "width": 32, "height": 32}], "format": {"type": "jpeg"}}],
         "concurrency": {"download": 1}, "state": "state.sqlite"}
        """)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("3 done"), "\(result.stdout)")
        #expect(try server.stats().counts["/nocache/a.jpg"] == 1)
        #expect(workspace.files(in: "out").count == 3)
    }

    @Test("Retry-After is honoured, in seconds and as an HTTP date")
    func retryAfter() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/ratelimit/2/a.jpg"), server.url("/ratelimitdate/3/b.jpg")])
        let started = Date()
        let result = try workspace.run([job])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try server.stats().counts["/ratelimit/2/a.jpg"] == 2)
        // With an initial delay of 0.05 s only Retry-After can make the run wait this long.
        #expect(elapsed >= 1.9, "waited \(elapsed)s")
    }

    @Test("limits cut transfers: a stalled body and an endless one")
    func limits() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/slow/a.jpg"), server.url("/endless/b.jpg")],
                                extra: #", "http": {"lowSpeedTime": 1, "timeout": 30}, "retry": {"attempts": 1}, "limits": {"maxDownloadBytes": 2000000}"#
                                    .replacingOccurrences(of: #", "retry": {"attempts": 1}"#, with: ""))
        let result = try workspace.run([job])
        #expect(result.status == 1)
        // "stalled", not "timed out": the low-speed limit cut it, well before the 30 s timeout.
        let items = try itemsByPath(workspace)
        #expect(items["/slow/a.jpg"]?.message?.hasPrefix("transfer stalled") == true, "\(String(describing: items["/slow/a.jpg"]))")
        #expect(items["/endless/b.jpg"]?.message?.hasPrefix("larger than limits.maxDownloadBytes (2000000 bytes)") == true)
    }

    @Test("concurrency.perHost caps the transfers one host gets at once")
    func perHostCap() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: (0..<12).map { server.url("/busy/\($0).jpg") },
                                extra: #", "concurrency": {"download": 8, "perHost": 2}"#)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("12 done"))
        #expect(try server.stats().maxInFlight == 2)
    }

    @Test("blacklist entries expire after blacklist.ttl")
    func blacklistTTL() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/status/404/a.jpg")], extra: #", "blacklist": {"ttl": "1h"}"#)
        #expect(try workspace.run([job]).stdout.contains("1 failed"))
        #expect(try workspace.run([job]).stdout.contains("1 blocked"), "within the ttl the URL stays blocked")
        #expect(try server.stats().counts["/status/404/a.jpg"] == 1)
        // An hour and a second later, as the state tells time.
        try StateDatabase.write(workspace.path("state.sqlite"), "UPDATE blacklist SET first_seen = first_seen - 3601, last_seen = last_seen - 3601")
        #expect(try workspace.run([job]).stdout.contains("1 failed"), "after the ttl it is asked again")
        #expect(try server.stats().counts["/status/404/a.jpg"] == 2)
    }

    @Test("cacheMaxBytes keeps the originals cache small, dropping least recently used originals")
    func cacheTrimming() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        // Each original is about 20 KB: the cap holds one.
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg"), server.url("/img/other/b.jpg")],
                                extra: #", "cacheMaxBytes": 30000, "cache": "originals""#)
        #expect(try workspace.run([job]).stdout.contains("2 done"))
        let cached = workspace.files(in: "originals")
        #expect(cached.count == 1, "\(cached)")
        // The dropped original is fetched again next time (unconditionally), the kept one revalidated.
        try server.reset()
        #expect(try workspace.run([job]).status == 0)
        let stats = try server.stats()
        #expect(stats.counts.values.reduce(0, +) == 2)
        #expect(stats.conditional.count == 1)
    }

    @Test("headers from the job and from the environment are sent and never stored")
    func headers() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg")],
                                extra: #", "http": {"headers": {"X-Static": "one"}, "headersFromEnv": {"Authorization": "RUNNER_TEST_TOKEN"}}"#)
        let result = try workspace.run([job, "--log-format", "json"], environment: ["RUNNER_TEST_TOKEN": "Bearer s3cret"])
        #expect(result.status == 0)
        let headers = try server.stats().headers["/img/a.jpg"] ?? [:]
        #expect(headers["X-Static"] == "one")
        #expect(headers["Authorization"] == "Bearer s3cret")
        #expect(!result.stdout.contains("s3cret") && !result.stderr.contains("s3cret"))
        let database = try Data(contentsOf: URL(fileURLWithPath: workspace.path("state.sqlite")))
        #expect(database.range(of: Data("s3cret".utf8)) == nil)
    }
}
