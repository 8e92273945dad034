import Foundation
import Testing
import TestSupport

/// Planning a list takes a URL's own text as its key when it is already canonical, and parses
/// everything else with `URLComponents`. The two must never disagree.
@Suite("URL keys")
struct RemoteURLTests {
    @Test("the canonical fast path gives URLComponents' key, folder and name, or leaves the URL to it")
    func fastPathAgreesWithURLComponents() {
        var random = FuzzRandom(seed: FuzzSettings.seed)
        // The first three of each list (two schemes) are plain.
        let schemes = ["http://", "https://", "HTTP://", "Https://", "ftp://", "https:/", ""]
        let hosts = ["example.com", "images.example.com", "a-b.example.co.uk", "Example.com", "EXAMPLE.COM",
                     "xn--bcher-kva.example", "127.0.0.1", "1.2.3", "[::1]", "-bad.com", "bad-.com", "a..b.com",
                     ".a.com", "a.com.", "localhost", "example.com:80", "example.com:443", "example.com:8080",
                     "example.com:0080", "example.com:", "user@example.com", "user:pw@example.com", "exa mple.com",
                     "bücher.example", "a_b.example.com", "9gag.com", "a.b1", "x.xn--p1ai", ""]
        let segments = ["", "a", "b.jpg", "%2F", "%2f", "%zz", "%", "%4", "a b", "ä", ".", "..", ".hidden", "..x",
                        "x.", "a;b=c", "~user", "a@b:c", "(x)", "a'b", "a\"b", "<x>", "a|b", "a^b", "a`b", "{x}",
                        "[x]", "a\\b", "100%25", "%252e", "a+b", "a!$&*,", "%E2%82%AC", "%e2%82%ac", "%FF"]
        let queries = ["", "?", "?v=3", "?a=b&c=d", "?q=%20", "?/x?y", "?a b", "?%zz", "?a/../b", "?ä"]
        let fragments = ["", "", "", "#", "#frag", "#a/b"]
        let edges = ["", "", "", " ", "\t", "\n"]
        var fastPathTaken = 0
        for index in 0..<40_000 {
            // Every other URL from the plain pieces only, so the fast path is taken often.
            let plain = index % 2 == 0
            let pick = { (items: [String]) in plain ? items[random.below(3)] : random.pick(items) }
            let path = (0..<random.below(5)).map { _ in "/" + pick(segments) }.joined()
            let text = pick(edges) + (plain ? schemes[random.below(2)] : random.pick(schemes)) + pick(hosts) + path
                + pick(queries) + pick(fragments) + pick(edges)
            let fast = RemoteURL(text), parsed = RemoteURL(parsing: text)
            if RemoteURL.canonicalParts(text) != nil { fastPathTaken += 1 }
            #expect(fast?.normalized == parsed?.normalized, "\(text.debugDescription)")
            #expect(fast?.folder == parsed?.folder, "\(text.debugDescription)")
            #expect(fast?.fileName == parsed?.fileName, "\(text.debugDescription)")
        }
        // The comparison means something only if both paths ran often.
        #expect(fastPathTaken > 2_000)
        #expect(RemoteURL.canonicalParts("https://images.example.com/catalog/1/product-00000001.jpg?v=3") != nil)
        #expect(RemoteURL.canonicalParts("https://Images.example.com/a.jpg") == nil)
    }

    @Test("a path with bytes that are not UTF-8 keeps its path: two such URLs of a host are two sources")
    func escapesThatAreNotUTF8() {
        // Through URLComponents (a capital in the host), as before the fast path.
        #expect(RemoteURL("https://A.com/x/%FF.jpg")?.normalized == "https://a.com/x/%FF.jpg")
        #expect(RemoteURL("https://A.com/y/%FF.jpg")?.fileName == "%FF.jpg")
        #expect(RemoteURL("https://A.com/y/%FF.jpg")?.folder == "a.com/y")
        #expect(RemoteURL("https://A.com")?.normalized == "https://a.com/")
    }

    @Test("a list line is remote when it has :// anywhere, as before")
    func looksRemote() {
        #expect(RemoteURL.looksRemote("https://a.com/x.jpg"))
        #expect(RemoteURL.looksRemote("s3://bucket/key"))
        #expect(RemoteURL.looksRemote("x://"))
        #expect(!RemoteURL.looksRemote("photos/a.jpg"))
        #expect(!RemoteURL.looksRemote("C:/a:/b"))
        #expect(!RemoteURL.looksRemote(":/"))
        #expect(!RemoteURL.looksRemote(""))
    }
}
