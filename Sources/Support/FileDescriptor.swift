import Foundation
#if canImport(Glibc)
import Glibc
#endif

package enum FileDescriptor {
    /// Writes all of `bytes`, retrying short writes and EINTR; nil, or the errno that stopped it.
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        guard let data = bytes.baseAddress else { return nil }
        var written = 0
        while written < bytes.count {
            let result = write(descriptor, data + written, bytes.count - written)
            if result < 0 { if errno == EINTR { continue }; return errno }
            written += result
        }
        return nil
    }

    /// Reads into `bytes` from `offset` until it is full or the file ends, retrying short reads and
    /// EINTR; the number of bytes read, or nil on an error.
    package static func readAll(_ descriptor: Int32, _ bytes: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int? {
        guard let data = bytes.baseAddress else { return 0 }
        var read = 0
        while read < bytes.count {
            let result = pread(descriptor, data + read, bytes.count - read, off_t(offset) + off_t(read))
            if result < 0 { if errno == EINTR { continue }; return nil }
            if result == 0 { break }
            read += result
        }
        return read
    }

    /// The file at `path` read whole, refused as soon as it is over `limit` bytes: by its size before
    /// a byte is read (a 20 GB file costs a `stat`), and by the bytes read (a pipe or /dev/stdin has
    /// no size), so memory never grows past the limit.
    package static func readWhole(_ path: String, limit: Int) throws(WholeFileError) -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .failed(errno) }
        defer { close(descriptor) }
        var info = stat()
        let size = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : nil
        if let size, size > limit { throw .tooLarge(size: size, limit: limit) }
        var bytes = Data(capacity: Int(min(size ?? 0, Int64(limit))) + 1)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &chunk, min(chunk.count, limit + 1 - bytes.count))
            if count < 0 { if errno == EINTR { continue }; throw .failed(errno) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > limit { throw .tooLarge(size: nil, limit: limit) }
        }
    }

    /// Writes a log line to stdout or stderr. A reader that went away (`runner … | head -1`, with
    /// SIGPIPE ignored during a run) only loses the lines: FileHandle's write would trap on EPIPE
    /// and kill the run its state database is still recording.
    package static func writeLog(_ text: String, to descriptor: Int32) {
        var text = text
        _ = text.withUTF8 { writeAll(descriptor, UnsafeRawBufferPointer($0)) }
    }
}

/// Why a file was not read whole: `open` or `read` failed, or it is over the reader's limit (its
/// size, or nil when it has none: more than the limit came from a pipe, or it grew while read).
package enum WholeFileError: Error, Equatable, CustomStringConvertible {
    case failed(Int32)
    case tooLarge(size: Int64?, limit: Int)

    package var description: String {
        switch self {
        case .failed(let code): String(cString: strerror(code))
        case .tooLarge(let size?, let limit): "it is \(size) bytes, over the limit of \(Quoted.bytes(limit))"
        case .tooLarge(nil, let limit): "it holds more than the limit of \(Quoted.bytes(limit))"
        }
    }
}
