import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes outputs so that no file under a final name is ever partial: a temporary file in the
/// destination folder, fsync, rename, fsync of the folder. A crash leaves at most a temporary
/// file, named `.NAME.runner-tmp-PID`, which the next run removes.
enum AtomicFile {
    static let temporaryMarker = ".runner-tmp-"

    static func write(_ data: Data, to path: String) throws(ItemFailure) {
        let folder = Paths.directory(of: path)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ItemFailure(.write, "cannot create \(folder): \(error.localizedDescription)")
        }
        let temporary = folder + "/." + Paths.lastComponent(path) + temporaryMarker + String(getpid())
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw systemFailure("cannot create \(temporary)") }
        var written = 0
        let failure: Int32? = data.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 { if errno == EINTR { continue }; return errno }
                written += count
            }
            return fsync(descriptor) == 0 ? nil : errno
        }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw ItemFailure(.write, "\(path): \(String(cString: strerror(failure)))")
        }
        guard rename(temporary, path) == 0 else {
            let failure = systemFailure("cannot rename into \(path)")
            unlink(temporary)
            throw failure
        }
        // The rename itself must be durable before the item is recorded done.
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }

    private static func systemFailure(_ what: String) -> ItemFailure {
        ItemFailure(.write, "\(what): \(String(cString: strerror(errno)))")
    }

    /// Removes temporary files left in `folders` by processes that no longer exist.
    @discardableResult
    static func removeStaleTemporaries(in folders: Set<String>) -> Int {
        var removed = 0
        for folder in folders {
            for entry in SourceDiscovery.listDirectory(folder) where !entry.isDirectory {
                guard entry.name.hasPrefix("."), let marker = entry.name.range(of: temporaryMarker, options: .backwards),
                      let pid = pid_t(entry.name[marker.upperBound...]) else { continue }
                if kill(pid, 0) != 0 && errno == ESRCH, unlink(folder + "/" + entry.name) == 0 {
                    removed += 1
                }
            }
        }
        return removed
    }
}
