internal import CSystem
import Foundation
import Support

/// Passes each discovered source on the first time its key is seen, in memory that stops growing:
/// `exactLimit` keys exactly (16 bytes each), then a fixed Bloom filter, new keys' digests and the
/// sources it may have seen waiting on disk. `finish` settles those a partition at a time: repeats
/// dropped, false matches passed on then (the only sources out of discovery order: 1 in 30,000 at 10M keys).
package struct UniqueSources: ~Copyable {
    private typealias Digest = UInt128
    /// A source the filter may have seen: its digest, and where its bytes are in the waiting file.
    private struct Waiting {
        let digest: Digest
        let offset: Int64
    }

    private static let partitionCount = 64
    private let exactLimit: Int
    private let bloomBits: Int
    private let folder: String
    private var exact = Set<UInt128>()
    private var bloom: [UInt64] = []
    private var passed: SpilledRecords<Digest>
    private var waiting: SpilledRecords<Waiting>
    private var waitingFile: Int32 = -1
    private var waitingBytes: Int64 = 0

    /// `exactLimit` keys exactly (1M: ~40 MB with the set's slack), then a filter of `bloomBits`
    /// (2^28: 32 MiB, 7 probes: 1 false match in ~30,000 at 10M keys, 1 in 2 at 100M).
    package init(spillingInto folder: String, exactLimit: Int = 1_000_000, bloomBits: Int = 1 << 28) {
        (self.folder, self.exactLimit) = (folder, exactLimit)
        self.bloomBits = max(64, bloomBits)
        passed = SpilledRecords(partitions: Self.partitionCount, spillingInto: folder, prefix: ".runner-keys-")
        waiting = SpilledRecords(partitions: Self.partitionCount, spillingInto: folder, prefix: ".runner-keys-")
    }

    deinit { if waitingFile >= 0 { close(waitingFile) } }

    /// True when `source` is to be visited now; false for a repeat, or a source that waits for `finish`.
    package mutating func admit(_ source: DiscoveredSource) throws(SpillFailure) -> Bool {
        let digest = DigestSet.digest(source.key)
        if bloom.isEmpty {
            guard exact.insert(digest).inserted else { return false }
            guard exact.count > exactLimit else { return true }
            // Leaving the exact set: its table goes before the filter comes (the two at once were the
            // plan's peak), and every remembered key goes to the passed digests, whatever the filter says.
            let remembered = Array(exact)
            exact = []
            bloom = [UInt64](repeating: 0, count: bloomBits / 64)
            for digest in remembered {
                _ = addToFilter(digest)
                try passed.append(digest, to: Self.partition(digest))
            }
            return true
        }
        if !addToFilter(digest) {
            try passed.append(digest, to: Self.partition(digest))
            return true
        }
        // The filter may have seen it: it waits on disk for `finish`.
        if waitingFile < 0 { waitingFile = try unlinkedFile(in: folder, prefix: ".runner-keys-") }
        let body: Data
        do { body = try JSONEncoder().encode(source) } catch { throw SpillFailure(description: "cannot encode \(source.key): \(error)") }
        var record = withUnsafeBytes(of: UInt32(body.count).littleEndian) { Data($0) }
        record.append(body)
        let failure = record.withUnsafeBytes { FileDescriptor.writeAll(waitingFile, $0) }
        if let failure { throw SpillFailure(description: "cannot write a temporary file in \(folder): \(String(cString: strerror(failure)))") }
        try waiting.append(Waiting(digest: digest, offset: waitingBytes), to: Self.partition(digest))
        waitingBytes += Int64(record.count)
        return false
    }

    /// Visits, in discovery order, the waiting sources whose keys were not passed on before them.
    package mutating func finish(_ visit: (DiscoveredSource) throws -> Void) throws {
        guard waitingFile >= 0 else { return }
        var newOffsets: [Int64] = []
        for partition in 0..<Self.partitionCount {
            let passedDigests = try passed.readBack(partition).sorted()
            var settled = Set<Digest>()
            for entry in try waiting.readBack(partition) {
                guard !Self.contains(passedDigests, entry.digest), settled.insert(entry.digest).inserted else { continue }
                newOffsets.append(entry.offset)
            }
        }
        for offset in newOffsets.sorted() {
            var length: UInt32 = 0
            let lengthRead = withUnsafeMutableBytes(of: &length) { FileDescriptor.readAll(waitingFile, $0, at: offset) }
            var body = Data(count: Int(UInt32(littleEndian: length)))
            let count = body.count
            guard lengthRead == 4, body.withUnsafeMutableBytes({ FileDescriptor.readAll(waitingFile, $0, at: offset + 4) }) == count else {
                throw SpillFailure(description: "cannot read back a temporary file in \(folder)")
            }
            try visit(try JSONDecoder().decode(DiscoveredSource.self, from: body))
        }
    }

    /// Sets `digest`'s bits; true when all of them were set already.
    private mutating func addToFilter(_ digest: Digest) -> Bool {
        let bits = UInt64(bloom.count * 64)
        let (high, low) = (UInt64(truncatingIfNeeded: digest >> 64), UInt64(truncatingIfNeeded: digest))
        var seen = true
        for probe in 0..<UInt64(7) {
            let bit = (low &+ probe &* (high | 1)) % bits
            let word = Int(bit / 64), mask = UInt64(1) << (bit % 64)
            if bloom[word] & mask == 0 { seen = false; bloom[word] |= mask }
        }
        return seen
    }

    private static func contains(_ sorted: [Digest], _ digest: Digest) -> Bool {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < digest { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == digest
    }

    private static func partition(_ digest: Digest) -> Int { Int(truncatingIfNeeded: digest >> 122) }
}
