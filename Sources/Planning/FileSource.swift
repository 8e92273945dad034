import Foundation
import Support

/// A local file: read in place by a worker; its identity is its size and modification time.
package struct FileSource: SourceKind {
    package let path: String

    package var location: String { path }
    package var fetched: (any FetchedSource)? { nil }

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

extension DiscoveredSource {
    package static func file(_ path: String, relativeDirectory: String) -> DiscoveredSource {
        DiscoveredSource(key: path, origin: .file(path), relativeDirectory: relativeDirectory,
                         fileName: Paths.lastComponent(path))
    }
}
