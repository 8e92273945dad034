import Foundation
import TestSupport
import Testing

/// "/\u{301}" is one Character to Swift and two things to the kernel: a slash, then a name
/// starting with a combining mark. Path arithmetic works on bytes.
@Suite("Path arithmetic on bytes")
struct PathBytesTests {
    @Test("normalize, directory, last component and relative see every slash")
    func slashBeforeACombiningMark() {
        #expect(Paths.normalize("/a/b/../\u{301}c") == "/a/\u{301}c")
        #expect(Paths.directory(of: "/a/b/\u{301}c") == "/a/b")
        #expect(Paths.lastComponent("/a/b/\u{301}c") == "\u{301}c")
        #expect(Paths.relative("/a/b/\u{301}c", to: "/a/b") == "\u{301}c")
        // Canonically equivalent is not the same name: café (é precomposed) is not cafe + U+0301.
        #expect(Paths.relative("/w/cafe\u{301}/x", to: "/w/caf\u{E9}") == nil)
        #expect(Paths.resolve("/\u{301}x", against: "/base") == "/\u{301}x")
    }

    @Test("token values cannot climb out of the template's root")
    func tokensStayInside() throws {
        let template = try PathTemplate("out/{dir}/{stem}.jpg", baseDirectory: "/j", location: "path")
        let climbing = template.expand(.init(stem: "x", ext: "jpg", dir: "../\u{301}z", name: "t", key: "k"))
        #expect(climbing == "/j/out/\u{301}z/x.jpg")
        let named = try PathTemplate("out/{stem}/{name}.jpg", baseDirectory: "/j", location: "path")
        #expect(named.expand(.init(stem: "../\u{301}y", ext: "", dir: "", name: "t", key: "k")) == "/j/out/.._\u{301}y/t.jpg")
        #expect(throws: JobFileError.self) { try PathTemplate("out\u{0}x/{stem}.jpg", baseDirectory: "/j", location: "path") }
        // An encoded slash is part of the name, which the template then cannot split.
        #expect(RemoteURL("http://h/img/..%2F%CC%81y.jpg")?.fileName == "../\u{301}y.jpg")
    }

    @Test("{dir} drops empty, . and .. segments and NULs, whatever the folder's shape")
    func dirSegments() throws {
        let template = try PathTemplate("out/{dir}/x.jpg", baseDirectory: "/j", location: "path")
        var random = FuzzRandom(seed: FuzzSettings.seed)
        let pieces = ["a", "b.c", ".", "..", "...", ".x", "", "\u{0}", "d\u{0}e", "\u{301}"]
        for _ in 0..<5_000 {
            let dir = (0..<random.below(5)).map { _ in random.pick(pieces) }.joined(separator: "/")
            // What {dir} made before its fast path: split on the slash byte, drop `.` and `..`
            // segments, drop NULs, join.
            let kept = String(decoding: Array(dir.utf8.split(separator: UInt8(ascii: "/")).filter { segment in
                !(segment.allSatisfy { $0 == UInt8(ascii: ".") } && segment.count <= 2)
            }.map { $0.filter { $0 != 0 } }.joined(separator: [UInt8(ascii: "/")])), as: UTF8.self)
            #expect(template.expand(.init(stem: "x", ext: "jpg", dir: dir, name: "t", key: "k"))
                    == Paths.normalize("/j/out/" + kept + "/x.jpg"), "\(dir.debugDescription)")
        }
    }

    @Test("a NUL in the state or cache path is a job-file error: the kernel would write beside the named place")
    func nulInStatePaths() {
        for (key, value) in [("state", #""a\u0000b.sqlite""#), ("cache", #""c\u0000d""#)] {
            #expect(throws: JobFileError("\(key)", "must not contain a NUL character")) {
                try Job.parse(text: """
                    {"version": 1, "sources": [{"path": "p"}], "\(key)": \(value),
                     "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}
                    """, filePath: "/j/job.json")
            }
        }
    }

    @Test("a NUL in a source's path, glob or list is a job-file error (a recursive walk of \"\\u0000\" overflowed the stack)")
    func nulInSources() {
        for (source, location) in [(#"{"path": "\u0000", "recursive": true}"#, "sources[0].path"),
                                   (#"{"glob": "p\u0000/*.jpg"}"#, "sources[0].glob"), (#"{"list": "l\u0000.txt"}"#, "sources[0].list")] {
            #expect(throws: JobFileError(location, "must not contain a NUL character")) {
                try Job.parse(text: """
                    {"version": 1, "sources": [\(source)],
                     "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}
                    """, filePath: "/j/job.json")
            }
        }
    }
}
