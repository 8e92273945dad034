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
}
