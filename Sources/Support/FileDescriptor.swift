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

    /// Writes a log line to stdout or stderr. A reader that went away (`runner … | head -1`, with
    /// SIGPIPE ignored during a run) only loses the lines: FileHandle's write would trap on EPIPE
    /// and kill the run its state database is still recording.
    package static func writeLog(_ text: String, to descriptor: Int32) {
        var text = text
        _ = text.withUTF8 { writeAll(descriptor, UnsafeRawBufferPointer($0)) }
    }
}
