import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads a local source into memory once; every chain of the source decodes from these bytes.
enum FileLoader {
    static func read(_ path: String) throws(ItemFailure) -> SourceBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ItemFailure(.unreadable, "\(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ItemFailure(.unreadable, "\(path): \(String(cString: strerror(errno)))") }
        let size = Int(info.st_size)
        var data = Data(count: size)
        var filled = 0
        let failure: Int32? = data.withUnsafeMutableBytes { buffer in
            while filled < size {
                let count = Glibc.read(descriptor, buffer.baseAddress! + filled, size - filled)
                if count < 0 { if errno == EINTR { continue }; return errno }
                if count == 0 { break }
                filled += count
            }
            return nil
        }
        if let failure { throw ItemFailure(.unreadable, "\(path): \(String(cString: strerror(failure)))") }
        data.count = filled
        return SourceBytes(data)
    }
}
