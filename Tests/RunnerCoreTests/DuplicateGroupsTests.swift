import Testing
import TestSupport

/// `count` hashes: two thirds drawn with `draw`, a third copies of an earlier one with 0 to
/// `flips` bits flipped, so there are pairs on both sides of any distance up to `flips`.
private func hashes(_ count: Int, flips: Int, seed: UInt64, draw: (inout FuzzRandom) -> UInt64 = { $0.next() }) -> [UInt64] {
    var random = FuzzRandom(seed: seed)
    var hashes: [UInt64] = []
    for index in 0..<count {
        guard index > 0, random.below(3) == 0 else { hashes.append(draw(&random)); continue }
        var copy = hashes[random.below(index)]
        for _ in 0..<random.below(flips + 1) { copy ^= 1 << random.below(64) }
        hashes.append(copy)
    }
    return hashes
}

/// A pair of indices as one number.
private func pair(_ first: Int, _ second: Int) -> UInt64 { UInt64(first) << 32 | UInt64(second) }

/// Every pair within `distance`, by checking them all: what the index must find.
private func allPairs(_ hashes: [UInt64], within distance: Int) -> Set<UInt64> {
    var pairs: Set<UInt64> = []
    for first in hashes.indices {
        for second in (first + 1)..<hashes.count where (hashes[first] ^ hashes[second]).nonzeroBitCount <= distance {
            pairs.insert(pair(first, second))
        }
    }
    return pairs
}

/// Connected components of those pairs, in DuplicateGroups' order.
private func components(_ count: Int, _ pairs: Set<UInt64>) -> [[Int]] {
    var parent = Array(0..<count)
    func root(_ element: Int) -> Int { parent[element] == element ? element : root(parent[element]) }
    for pair in pairs {
        let (a, b) = (root(Int(pair >> 32)), root(Int(pair & 0xffff_ffff)))
        if a != b { parent[max(a, b)] = min(a, b) }
    }
    let groups = Dictionary(grouping: 0..<count, by: root).values.map { $0.sorted() }.filter { $0.count > 1 }
    return groups.sorted { ($0.count, $1[0]) > ($1.count, $0[0]) }
}

@Suite("Duplicate groups: the multi-index hashing index against checking every pair")
struct DuplicateGroupsTests {
    @Test("the index finds exactly the pairs within the distance, and the groups are their connected components",
          arguments: [0, 1, 2, 3, 5, 7, 10, 12])
    func matchesBruteForce(distance: Int) {
        // Uniform hashes, and crowded ones (only the low 20 bits vary: few table slots, full ones).
        let uniform = hashes(700, flips: distance + 3, seed: UInt64(distance))
        let crowded = hashes(700, flips: distance + 3, seed: UInt64(100 + distance)) { $0.next() & 0xfffff }
        for (set, name) in [(uniform, "uniform"), (crowded, "crowded")] {
            let expected = allPairs(set, within: distance)
            #expect(!expected.isEmpty, "\(name): pairs to find")
            // The chosen number of parts, and others: fewer parts than distance + 1 search
            // neighbouring slots (parts may differ in distance / parts bits), more look up exact ones.
            for parts in (distance <= 5 ? [nil, 3, 4, 7, 13] : [nil, 4, 7, 13]) as [Int?] {
                var found: Set<UInt64> = []
                HammingIndex(set, radius: distance, parts: parts).forEachPair { found.insert(pair($0, $1)) }
                let missed = expected.subtracting(found).count, extra = found.subtracting(expected).count
                #expect(missed == 0 && extra == 0, "\(name), distance \(distance), \(parts.map(String.init) ?? "chosen") parts: \(missed) missed, \(extra) extra")
            }
            #expect(DuplicateGroups.near(set, within: distance) == components(set.count, expected))
        }
    }

    @Test("near duplicates chain into one group; groups come largest first, members in input order")
    func chainsAndOrder() {
        let a: UInt64 = 0x0123_4567_89ab_cdef
        let b = a ^ 0b11111        // 5 bits from a
        let c = b ^ 0b11111 << 8   // 5 from b, 10 from a
        let far = ~a
        let twin = far ^ 1
        #expect(DuplicateGroups.near([far, a, b, twin, c, 42], within: 5) == [[1, 2, 4], [0, 3]])
        #expect(DuplicateGroups.near([far, a, b, twin, c, 42], within: 4) == [[0, 3]])
        #expect(DuplicateGroups.near([a, a, a], within: 0) == [[0, 1, 2]])
        #expect(DuplicateGroups.near([], within: 5) == [])
        #expect(DuplicateGroups.near([a], within: 63) == [])
    }

    @Test("exact duplicates group by equal keys, largest group first")
    func exact() {
        #expect(DuplicateGroups.exact(["b", "a", "b", "c", "a", "b", "d"]) == [[0, 2, 5], [1, 4]])
        #expect(DuplicateGroups.exact(["x", "y"]) == [])
        #expect(DuplicateGroups.exact([UInt64]()) == [])
    }
}
