internal import CSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support

/// Finds output paths written by two different items anywhere in a job, whichever shard each
/// belongs to, in memory that does not grow with the job: each named output is 16 bytes (a digest
/// of its path and one of its item key) appended to one of 64 partitions by its path's digest. A
/// partition holds up to 8,192 of them in memory and then goes on in an unlinked temporary file;
/// at the end each partition is sorted on its own (a 64th of the job at a time: 2.5 MB for ten
/// million outputs) and neighbours with one path and two keys are suspects, which the planner
/// confirms with the names themselves (a 64-bit digest can match by chance).
package struct OutputCollisions: ~Copyable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    private struct Record: Comparable {
        let path: UInt64
        let item: UInt64
        static func < (a: Record, b: Record) -> Bool { (a.path, a.item) < (b.path, b.item) }
    }

    private static let partitionCount = 64, bufferLimit = 8_192
    private let folder: String
    private var buffers: [[Record]]
    private var files: [Int32]

    /// Spills, if the job is large enough to need it, into `folder`.
    package init(spillingInto folder: String) {
        self.folder = folder
        buffers = Array(repeating: [], count: Self.partitionCount)
        files = Array(repeating: -1, count: Self.partitionCount)
    }

    deinit { for file in files where file >= 0 { close(file) } }

    /// Adds an output: its path, and a digest telling its item from any other (the same item
    /// named twice, a source repeated in a list, is not a collision).
    package mutating func add(path: String, item: UInt64) throws(Failure) {
        let digest = StableHash.value(path)
        // The top bits pick the partition: the low ones are what a partition's sort compares first.
        let partition = Int(truncatingIfNeeded: (digest &* 0x9e37_79b9_7f4a_7c15) >> 58)
        buffers[partition].append(Record(path: digest, item: item))
        if buffers[partition].count >= Self.bufferLimit { try spill(partition) }
    }

    /// Digests of paths named by at least two different items.
    package mutating func suspects() throws(Failure) -> Set<UInt64> {
        var found = Set<UInt64>()
        for partition in 0..<Self.partitionCount {
            var records = try readBack(partition)
            records.sort()
            for index in records.indices.dropFirst()
            where records[index].path == records[index - 1].path && records[index].item != records[index - 1].item {
                found.insert(records[index].path)
            }
        }
        return found
    }

    private mutating func spill(_ partition: Int) throws(Failure) {
        if files[partition] < 0 {
            var template = Array((folder + "/.runner-outputs-XXXXXX").utf8CString)
            let file = template.withUnsafeMutableBufferPointer { mkostemp($0.baseAddress!, O_CLOEXEC) }
            guard file >= 0 else { throw Failure(description: "cannot create a temporary file in \(folder): \(String(cString: strerror(errno)))") }
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            files[partition] = file
        }
        let failure = buffers[partition].withUnsafeBytes { FileDescriptor.writeAll(files[partition], $0) }
        if let failure { throw Failure(description: "cannot write a temporary file in \(folder): \(String(cString: strerror(failure)))") }
        buffers[partition].removeAll(keepingCapacity: true)
    }

    /// A partition's records, the spilled ones first; its buffer is released.
    private mutating func readBack(_ partition: Int) throws(Failure) -> [Record] {
        var records: [Record] = []
        let file = files[partition]
        if file >= 0 {
            let size = Int(lseek(file, 0, SEEK_END))
            lseek(file, 0, SEEK_SET)
            // A partition's file exists only once it spilled, so it is never empty.
            records = [Record](unsafeUninitializedCapacity: size / MemoryLayout<Record>.stride) { buffer, count in
                let bytes = UnsafeMutableRawPointer(buffer.baseAddress!)
                var done = 0
                while done < size {
                    let got = Glibc.read(file, bytes + done, size - done)
                    if got < 0 && errno == EINTR { continue }
                    guard got > 0 else { break }
                    done += got
                }
                count = done == size ? size / MemoryLayout<Record>.stride : 0
            }
            guard records.count * MemoryLayout<Record>.stride == size else {
                throw Failure(description: "cannot read back a temporary file in \(folder)")
            }
        }
        records += buffers[partition]
        buffers[partition] = []
        return records
    }
}
