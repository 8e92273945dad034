// Times DuplicateGroups on many 64-bit hashes, compiled on its own with the file it measures
// (`make bench-duplicates`):
//
//   swiftc -O -parse-as-library -package-name runner Sources/Support/DuplicateGroups.swift \
//       bench/duplicates.swift -o bench/cache/duplicates
//   bench/cache/duplicates [COUNT] [DISTANCE...]        (default 1000000, distances 5 and 10)
//
// The hashes: 90% uniformly random, 10% copies of an earlier one with 0 to DISTANCE bits flipped,
// so there are groups to find (a group may be a chain). Uniform hashes spread evenly over the
// index's slots; real dHashes are less even, which makes some slots fuller. Prints, per distance,
// the seconds grouping took (wall and CPU), the groups found and the process's peak RSS so far;
// then exact grouping of as many 64-bit content keys (5% repeated).
import Foundation

/// SplitMix64: a fixed sequence, so every run measures the same hashes.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

func hashes(count: Int, distance: Int, random: inout SplitMix64) -> [UInt64] {
    var hashes: [UInt64] = []
    hashes.reserveCapacity(count)
    for index in 0..<count {
        guard index > 0, random.next() % 10 == 0 else { hashes.append(random.next()); continue }
        var copy = hashes[Int(random.next() % UInt64(index))]
        for _ in 0..<Int(random.next() % UInt64(distance + 1)) { copy ^= 1 << (random.next() % 64) }
        hashes.append(copy)
    }
    return hashes
}

func peakRSS() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_maxrss) / 1024  // KiB on Linux
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    let time = { (value: timeval) in Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
    return time(usage.ru_utime) + time(usage.ru_stime)
}

/// Wall and CPU seconds (on a shared machine the CPU time is the steadier of the two).
func seconds(_ body: () -> Void) -> (wall: Double, cpu: Double) {
    let (start, cpu) = (DispatchTime.now().uptimeNanoseconds, cpuSeconds())
    body()
    return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, cpuSeconds() - cpu)
}

@main
struct DuplicatesBench {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
        let count = arguments.first ?? 1_000_000
        let distances = arguments.count > 1 ? Array(arguments.dropFirst()) : [5, 10]
        var random = SplitMix64(state: 23)
        print("hashes: \(count); peak RSS before: \(String(format: "%.0f", peakRSS())) MiB")
        for distance in distances {
            let input = hashes(count: count, distance: distance, random: &random)
            var groups: [[Int]] = []
            let time = seconds { groups = DuplicateGroups.near(input, within: distance) }
            let grouped = groups.reduce(0) { $0 + $1.count }
            print(String(format: "near, distance %d: %.2f s (CPU %.2f s), %d groups (%d hashes, largest %d), peak RSS %.0f MiB",
                         distance, time.wall, time.cpu, groups.count, grouped, groups.first?.count ?? 0, peakRSS()))
        }
        var keys: [UInt64] = []
        for index in 0..<count { keys.append(index > 0 && random.next() % 20 == 0 ? keys[Int(random.next() % UInt64(index))] : random.next()) }
        var exact: [[Int]] = []
        let time = seconds { exact = DuplicateGroups.exact(keys) }
        print(String(format: "exact: %.2f s (CPU %.2f s), %d groups, peak RSS %.0f MiB", time.wall, time.cpu, exact.count, peakRSS()))
    }
}
