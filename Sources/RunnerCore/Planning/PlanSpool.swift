internal import CSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The sources a run will work on, written once by the planning pass and read back in order,
/// so a run's memory does not grow with its length. The file sits beside the state database
/// (not in /tmp, often a RAM disk) and is unlinked as soon as it is opened: nothing to clean up,
/// even after a crash. One JSON line per source. Not thread-safe: one writer, then one reader.
final class PlanSpool: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let descriptor: Int32
    private var pendingWrite = Data()
    private var reader: LineChannel?
    private(set) var count = 0

    init(besideStateAt statePath: String) throws {
        var template = Array((Paths.directory(of: statePath) + "/.runner-plan-XXXXXX").utf8CString)
        descriptor = template.withUnsafeMutableBufferPointer { mkostemp($0.baseAddress!, O_CLOEXEC) }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard descriptor >= 0 else {
            throw PlanSpool.Failure(description: "cannot create the plan file beside \(statePath): \(String(cString: strerror(errno)))")
        }
        unlink(path)
    }

    deinit { close(descriptor) }

    func append(_ source: PlannedSource) throws {
        pendingWrite.append(try JSONEncoder().encode(source))
        pendingWrite.append(UInt8(ascii: "\n"))
        count += 1
        if pendingWrite.count >= 1 << 20 { try flush() }
    }

    /// Ends writing; `next()` then reads from the first source.
    func finishWriting() throws {
        try flush()
        lseek(descriptor, 0, SEEK_SET)
        reader = LineChannel(input: descriptor, output: -1)
    }

    /// The next source, or nil after the last.
    func next() -> PlannedSource? {
        reader?.receive(PlannedSource.self)
    }

    private func flush() throws {
        if let failure = pendingWrite.withUnsafeBytes({ FileDescriptor.writeAll(descriptor, $0) }) {
            throw PlanSpool.Failure(description: "cannot write the plan file: \(String(cString: strerror(failure)))")
        }
        pendingWrite.removeAll(keepingCapacity: true)
    }
}
