/// Groups of duplicates, near by a 64-bit perceptual hash or exact by content hash: indices into the
/// input in input order, groups of one left out, the largest first (ties by their first index).
package enum DuplicateGroups {
    /// Connected components of "at most `distance` bits apart": a chain of near duplicates is one
    /// group even where its ends differ by more. Found through a `HammingIndex`, not all pairs.
    package static func near(_ hashes: [UInt64], within distance: Int) -> [[Int]] {
        var components = UnionFind(count: hashes.count)
        HammingIndex(hashes, radius: distance).forEachPair { components.union($0, $1) }
        return groups(roots: hashes.indices.map { components.find($0) })
    }

    /// Indices whose keys are equal.
    package static func exact<Key: Hashable>(_ keys: [Key]) -> [[Int]] {
        var first: [Key: Int] = [:]
        first.reserveCapacity(keys.count)
        var roots = [Int](repeating: 0, count: keys.count)
        for (index, key) in keys.enumerated() {
            if let earlier = first[key] { roots[index] = earlier } else { (first[key], roots[index]) = (index, index) }
        }
        return groups(roots: roots)
    }

    /// The groups of indices that share a root (an index of the same group), with more than one member.
    private static func groups(roots: [Int]) -> [[Int]] {
        var sizes = [Int32](repeating: 0, count: roots.count)
        for root in roots { sizes[root] += 1 }
        var slots = [Int32](repeating: -1, count: roots.count)
        var groups: [[Int]] = []
        for (index, root) in roots.enumerated() where sizes[root] > 1 {
            if slots[root] < 0 {
                slots[root] = Int32(groups.count)
                groups.append([])
                groups[groups.count - 1].reserveCapacity(Int(sizes[root]))
            }
            groups[Int(slots[root])].append(index)
        }
        return groups.sorted { ($0.count, $1[0]) > ($1.count, $0[0]) }
    }
}

/// Multi-index hashing (Norouzi, Punjani and Fleet, CVPR 2012) over 64-bit hashes: each hash is cut
/// into `m` parts, and each part indexes a table. Two hashes within `radius` bits agree within
/// `radius / m` bits on at least one part (pigeonhole), so a hash's candidates are the entries
/// whose part lies within that many bits of its own in some table, which are then checked
/// whole. `m` is chosen for the number of hashes and the radius: wide parts mean few entries per
/// table slot but many slots to visit once parts may differ, narrow parts the other way round.
package struct HammingIndex {
    private let hashes: [UInt64]
    private let radius: Int
    /// Each part's lowest bit and width.
    private let parts: [(shift: Int, bits: Int)]
    /// Every pattern of at most `radius / m` bits set within a part, to visit its neighbours.
    private let flips: [UInt64]

    /// One part's table: the hashes ordered by the part's value, and where each value's run starts.
    private struct Table {
        let shift: Int
        let bits: Int
        /// `starts[v]..<starts[v + 1]` are the entries whose part is `v`.
        let starts: [UInt32]
        /// Entries in part order: the hash (read while checking, in order) and its index.
        let sortedHashes: [UInt64]
        let indices: [UInt32]

        init(_ hashes: [UInt64], shift: Int, bits: Int) {
            (self.shift, self.bits) = (shift, bits)
            let mask = UInt64(1) << bits - 1
            var starts = [UInt32](repeating: 0, count: (1 << bits) + 1)
            for hash in hashes { starts[Int((hash >> shift) & mask) + 1] += 1 }
            for value in 0..<(1 << bits) { starts[value + 1] += starts[value] }
            var next = starts
            var sortedHashes = [UInt64](repeating: 0, count: hashes.count)
            var indices = [UInt32](repeating: 0, count: hashes.count)
            for (index, hash) in hashes.enumerated() {
                let value = Int((hash >> shift) & mask)
                sortedHashes[Int(next[value])] = hash
                indices[Int(next[value])] = UInt32(index)
                next[value] += 1
            }
            (self.starts, self.sortedHashes, self.indices) = (starts, sortedHashes, indices)
        }
    }

    /// `parts` (3 to 64) overrides the chosen number of parts, so tests can try each.
    package init(_ hashes: [UInt64], radius: Int, parts: Int? = nil) {
        precondition((0...63).contains(radius), "a radius of 0 to 63 bits")
        precondition(hashes.count < Int(UInt32.max), "at most 2^32 - 1 hashes")
        let count = parts ?? Self.partCount(hashes: hashes.count, radius: radius)
        precondition((3...64).contains(count), "3 to 64 parts (at most 22 bits each)")
        let widths = (0..<count).map { 64 / count + ($0 < 64 % count ? 1 : 0) }
        self.parts = widths.indices.map { (widths[..<$0].reduce(0, +), widths[$0]) }
        (self.hashes, self.radius) = (hashes, radius)
        flips = Self.patterns(bits: widths.max() ?? 0, weight: radius / count)
    }

    /// Calls `body(i, j)`, `i < j`, for every pair within the radius (a pair may come more than
    /// once). One part's table at a time, so memory holds one; each table is walked in its own
    /// order, so the slots each flipped pattern visits move forward together through memory. Two
    /// slots a flip apart are compared once, from the lower one.
    package func forEachPair(_ body: (Int, Int) -> Void) {
        for (shift, bits) in parts {
            let table = Table(hashes, shift: shift, bits: bits)
            let flips = self.flips.filter { $0 >> bits == 0 }
            for value in 0..<(1 << bits) {
                let run = Int(table.starts[value])..<Int(table.starts[value + 1])
                guard !run.isEmpty else { continue }
                for flip in flips {
                    let other = Int(UInt64(value) ^ flip)
                    guard other >= value else { continue }
                    let candidates = Int(table.starts[other])..<Int(table.starts[other + 1])
                    for entry in run {
                        let (hash, first) = (table.sortedHashes[entry], Int(table.indices[entry]))
                        // Within one slot, each pair once.
                        for candidate in (other == value ? entry + 1 : candidates.lowerBound)..<candidates.upperBound
                        where (table.sortedHashes[candidate] ^ hash).nonzeroBitCount <= radius {
                            let second = Int(table.indices[candidate])
                            body(min(first, second), max(first, second))
                        }
                    }
                }
            }
        }
    }

    /// The number of parts with the least expected work for `hashes` random hashes: per hash, the
    /// slots visited and the entries found there; plus the tables' slots. Parts of at most 24 bits
    /// keep a table's slots within 64 MiB.
    private static func partCount(hashes: Int, radius: Int) -> Int {
        let candidates = (3...64).map { count -> (count: Int, cost: Double) in
            let width = (64 + count - 1) / count
            let visited = Double(patterns(bits: width, weight: radius / count, limit: 1 << 16))
            let perSlot = Double(hashes) / Double(UInt64(1) << width)
            let work = Double(hashes) * Double(count) * visited * (2 + perSlot) + Double(count) * Double(UInt64(1) << width)
            return (count, work)
        }
        return candidates.min { $0.cost < $1.cost }!.count
    }

    /// How many patterns `patterns(bits:weight:)` has, counting no further than `limit`.
    private static func patterns(bits: Int, weight: Int, limit: Int) -> Int {
        var total = 0, term = 1
        for chosen in 0...min(weight, bits) {
            if chosen > 0 { term = term * (bits - chosen + 1) / chosen }
            total += term
            if total >= limit { return limit }
        }
        return total
    }

    /// Every value of `bits` bits with at most `weight` of them set, fewest first.
    private static func patterns(bits: Int, weight: Int) -> [UInt64] {
        var found: [UInt64] = [0]
        var layer: [UInt64] = [0]
        for _ in 0..<min(weight, bits) {
            // Extend each pattern only above its highest set bit, so each comes once.
            layer = layer.flatMap { pattern in
                let lowest = pattern == 0 ? 0 : 64 - pattern.leadingZeroBitCount
                return (lowest..<bits).map { pattern | UInt64(1) << $0 }
            }
            found += layer
        }
        return found
    }
}

/// Disjoint sets with path halving and union by size.
private struct UnionFind {
    private var parent: [UInt32]
    private var size: [UInt32]

    init(count: Int) {
        parent = (0..<count).map(UInt32.init)
        size = [UInt32](repeating: 1, count: count)
    }

    mutating func find(_ element: Int) -> Int {
        var element = element
        while Int(parent[element]) != element {
            parent[element] = parent[Int(parent[element])]
            element = Int(parent[element])
        }
        return element
    }

    mutating func union(_ first: Int, _ second: Int) {
        var (a, b) = (find(first), find(second))
        guard a != b else { return }
        if size[a] < size[b] { swap(&a, &b) }
        parent[b] = UInt32(a)
        size[a] += size[b]
    }
}
