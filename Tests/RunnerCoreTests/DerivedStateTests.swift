import Foundation
import Testing
import TestSupport

@Suite("Derived values in the state database")
struct DerivedStateTests {
    private static func source(_ key: String, fingerprint: String, _ values: [(String, String)], hash: String?) -> ItemEvent {
        .source(sourceKey: key, location: key, fingerprint: fingerprint,
                SourceFacts(bytes: 10, width: 4, height: 3, format: "jpeg", contentHash: hash),
                derived: values.map { .init(name: $0.0, identifier: "\($0.0)(v)", json: $0.1) })
    }

    @Test("sources stream in SQLite's byte order with their current values; planning's ledger sees the fingerprints and the kept content hash")
    func readBack() throws {
        let workspace = try Workspace()
        let store = try StateStore(path: workspace.path("s.sqlite"))
        // Byte order puts "Z" before "e" before "z" before "é"; Swift's String order differs for "é".
        let keys = ["/a/é.jpg", "/a/z.jpg", "/a/Z.jpg", "/a/e.jpg"]
        try store.record(keys.map { Self.source($0, fingerprint: "f1", [("dhash", "\"\($0.count)\""), ("focal", #"{"x":0.5,"y":0.25}"#)],
                                                hash: "h-" + $0) },
                         runID: 0)
        // The same source again under a new content, with one value only: the other is stale, and
        // the content hash is kept only for the same content (here it is not, and none was taken).
        try store.record([Self.source("/a/z.jpg", fingerprint: "f2", [("dhash", "\"new\"")], hash: nil)], runID: 0)
        var seen: [(String, [String])] = []
        try store.forEachDerivedSource { seen.append(($0.source.key, $0.values.keys.sorted())) }
        #expect(seen.map(\.0) == ["/a/Z.jpg", "/a/e.jpg", "/a/z.jpg", "/a/é.jpg"])
        #expect(seen.map(\.1) == [["dhash(v)", "focal(v)"], ["dhash(v)", "focal(v)"], ["dhash(v)"], ["dhash(v)", "focal(v)"]])
        var named: [String] = []
        try store.forEachDerivedSource(names: ["focal"]) { named.append($0.source.key) }
        #expect(named == ["/a/Z.jpg", "/a/e.jpg", "/a/é.jpg"])

        let record = try #require(try store.sourceRecords(of: ["/a/e.jpg"])["/a/e.jpg"])
        #expect(record.value("focal(v)") == .object(["x": .number(0.5), "y": .number(0.25)]))
        #expect(record.source.contentHash == "h-/a/e.jpg" && record.source.width == 4 && record.source.format == "jpeg")
        #expect(try store.sourceRecords(of: ["/a/z.jpg"])["/a/z.jpg"]?.source.contentHash == nil)
        #expect(try store.sourceRecords(of: ["/nowhere"])["/nowhere"] == nil)

        let ledger = try store.plan { try $0.derivedLedger("/a/z.jpg") }
        #expect(ledger.values == ["dhash(v)": "f2", "focal(v)": "f1"] && ledger.contentHashFingerprint == "f2")
        // A worker that did not hash the same content again keeps the hash on record.
        try store.record([Self.source("/a/e.jpg", fingerprint: "f1", [("phash", "\"p\"")], hash: nil)], runID: 0)
        #expect(try store.sourceRecords(of: ["/a/e.jpg"])["/a/e.jpg"]?.source.contentHash == "h-/a/e.jpg")
    }
}
