internal import CSystem
import Foundation
import Support

/// A temporary file that could not be made, written or read back (a full or read-only disk).
package struct SpillFailure: Error, CustomStringConvertible {
    package let description: String
}

/// Fixed-size records in partitions of up to 8,192 in memory, then in an unlinked temporary file:
/// a job's worth of digests costs disk, not memory, and is read back one partition at a time.
struct SpilledRecords<Record: BitwiseCopyable>: ~Copyable {
    private let folder: String
    private let prefix: String
    private var buffers: [[Record]]
    private var files: [Int32]

    /// Spills, when a partition outgrows its buffer, into `folder`, as `prefix` plus a random suffix.
    init(partitions: Int, spillingInto folder: String, prefix: String) {
        (self.folder, self.prefix) = (folder, prefix)
        buffers = Array(repeating: [], count: partitions)
        files = Array(repeating: -1, count: partitions)
    }

    deinit { for file in files where file >= 0 { close(file) } }

    mutating func append(_ record: Record, to partition: Int) throws(SpillFailure) {
        buffers[partition].append(record)
        guard buffers[partition].count >= 8_192 else { return }
        if files[partition] < 0 { files[partition] = try unlinkedFile(in: folder, prefix: prefix) }
        let failure = buffers[partition].withUnsafeBytes { FileDescriptor.writeAll(files[partition], $0) }
        if let failure { throw SpillFailure(description: "cannot write a temporary file in \(folder): \(String(cString: strerror(failure)))") }
        buffers[partition].removeAll(keepingCapacity: true)
    }

    /// A partition's records in the order they came; its buffer is released.
    mutating func readBack(_ partition: Int) throws(SpillFailure) -> [Record] {
        var records: [Record] = []
        let file = files[partition]
        if file >= 0 {
            let size = Int(lseek(file, 0, SEEK_END))
            // A partition's file exists only once it spilled, so it is never empty.
            records = [Record](unsafeUninitializedCapacity: size / MemoryLayout<Record>.stride) { buffer, count in
                let done = FileDescriptor.readAll(file, UnsafeMutableRawBufferPointer(buffer), at: 0)
                count = done == size ? size / MemoryLayout<Record>.stride : 0
            }
            guard records.count * MemoryLayout<Record>.stride == size else {
                throw SpillFailure(description: "cannot read back a temporary file in \(folder)")
            }
        }
        records += buffers[partition]
        buffers[partition] = []
        return records
    }
}

/// A new file in `folder` that nobody else can open and that goes when it is closed; `what` names it in an error.
func unlinkedFile(in folder: String, prefix: String, what: String? = nil) throws(SpillFailure) -> Int32 {
    var template = Array((folder + "/" + prefix + "XXXXXX").utf8CString)
    let file = template.withUnsafeMutableBufferPointer { mkostemp($0.baseAddress!, O_CLOEXEC) }
    guard file >= 0 else {
        throw SpillFailure(description: "cannot create \(what ?? "a temporary file in \(folder)"): \(String(cString: strerror(errno)))")
    }
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    return file
}
