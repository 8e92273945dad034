import Foundation
@testable import Planning
import Testing
import TestSupport

@Suite("Deduplicating sources in flat memory")
struct UniqueSourcesTests {
    @Test("past its exact limit each key is passed on once and every repeat dropped, even with a full Bloom filter")
    func eachKeyOnce() throws {
        let workspace = try Workspace()
        var random = FuzzRandom(seed: FuzzSettings.seed)
        let keys = (0..<5_000).map { _ in "https://h.example/\(random.below(2_000)).jpg" }
        var firstOccurrences: [String] = [], seen = Set<String>()
        for key in keys where seen.insert(key).inserted { firstOccurrences.append(key) }
        // In memory only; past the limit with a roomy filter; with a full one (every new key waits).
        for (limit, bits) in [(1_000_000, 1 << 20), (100, 1 << 20), (100, 64), (0, 4_096)] {
            var unique = UniqueSources(spillingInto: workspace.root, exactLimit: limit, bloomBits: bits)
            var atOnce: [String] = [], late: [String] = []
            for key in keys {
                let source = DiscoveredSource.remote(key, key: nil, headers: [:])
                if try unique.admit(source) { atOnce.append(source.key) }
            }
            try unique.finish { late.append($0.key) }
            #expect((atOnce + late).count == firstOccurrences.count, "limit \(limit), \(bits) bits")
            #expect(Set(atOnce + late) == Set(firstOccurrences), "limit \(limit), \(bits) bits")
            let passedAtOnce = Set(atOnce)
            #expect(atOnce == firstOccurrences.filter { passedAtOnce.contains($0) }, "discovery order")
            #expect(late.isEmpty == (bits > 64 * 64), "limit \(limit), \(bits) bits: \(late.count) waited")
        }
    }

    @Test("a list with repeats past the exact limit plans each source once, as below it")
    func planningPastTheLimit() throws {
        let workspace = try Workspace()
        let lines = (0..<300).map { "https://h.example/p\($0 % 120).jpg" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: workspace.path("list.txt"), atomically: true, encoding: .utf8)
        let job = try Job.parse(text: """
            {"version": 1, "sources": [{"list": "list.txt"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}],
             "state": "state.sqlite"}
            """, filePath: workspace.path("job.json"))
        var planner = Planner(job: job, vipsVersion: "test")
        let exact = try planner.expand().sources.map(\.key)
        planner.uniqueKeysInMemory = 10
        let bounded = try planner.expand().sources.map(\.key)
        #expect(exact.count == 120)
        #expect(bounded == exact)
    }
}
