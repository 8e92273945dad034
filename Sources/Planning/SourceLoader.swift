import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support

/// One kind of source (a local file, a URL; the object stores that come next): everything planning
/// and the run ask of a source that depends on its kind. `SourceOrigin` stores which kind a source
/// is (it travels through the plan spool); `SourceOrigin.loader` is the one place that matches on
/// it, and every other stage asks the loader.
package protocol SourceLoader: Sendable {
    /// The file path or URL, for people.
    var location: String { get }
    /// What planning knows of the content before any transfer: a file's size and modification
    /// time, or why it cannot be read; for a fetched source, nothing until its cached original or a
    /// download says. `stats` reads file metadata, folder by folder.
    func plannedIdentity(statting stats: FolderStat) -> SourceIdentity
    /// Where the download stage fetches it from (the key of its blacklist entry and cached
    /// original); nil for a source a worker reads where it is, at `location`.
    var fetch: RemoteSource? { get }
}

extension SourceOrigin {
    package var loader: any SourceLoader {
        switch self {
        case .file(let path): FileSource(path: path)
        case .remote(let remote): remote
        }
    }
}

/// A local file: read in place by a worker; its identity is its size and modification time.
package struct FileSource: SourceLoader {
    package let path: String

    package var location: String { path }
    package var fetch: RemoteSource? { nil }

    package func plannedIdentity(statting stats: FolderStat) -> SourceIdentity {
        var info = stat()
        guard stats.stat(path, &info) else {
            let code = errno
            if code == ENOENT && Paths.hasUnnamableBytes(path) { return .missing("\(path): \(Paths.unnamable)") }
            return .missing("\(path): \(String(cString: strerror(code)))")
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            let name = [S_IFIFO: "fifo", S_IFCHR: "character device", S_IFBLK: "block device", S_IFSOCK: "socket", S_IFDIR: "folder"][type] ?? "other"
            return .notRegular(type: name, message: "\(path): not a regular file")
        }
        let nanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return .file(size: Int64(info.st_size), modifiedNanoseconds: nanoseconds)
    }
}

/// An HTTP(S) URL: fetched into the originals cache by the download stage; its content is known
/// from the cached original's hash, or not yet.
extension RemoteSource: SourceLoader {
    package var location: String { url }
    package var fetch: RemoteSource? { self }
    package func plannedIdentity(statting stats: FolderStat) -> SourceIdentity { .unknown }
}
