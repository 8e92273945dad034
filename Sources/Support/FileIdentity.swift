import Foundation

/// What changes whenever a file or folder does: inode, size, modification and change times (ns). No
/// one can set a change time back, so an unchanged identity read `racyWindow` after the last change
/// (`settled`) means unchanged contents. Not the device: each NFS client numbers a mount its own way
/// (git leaves st_dev out of its index for the same reason).
package struct FileIdentity: Equatable, Sendable, LosslessStringConvertible {
    package let inode: UInt64
    package let size: Int64
    package let modified: Int64
    package let changed: Int64

    /// How long before a reading a file must have been last changed for the reading to be trusted
    /// later: a change within the same timestamp tick as the read would keep every part of its
    /// identity (as git's racy-clean index entries).
    package static let racyWindow: Int64 = 2_000_000_000

    /// The identity of what `path` names (following symlinks); nil if it cannot be `stat`ed.
    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The identity `stat` reported in `info`.
    package init(_ info: stat) {
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Self.nanoseconds(info.st_mtim)
        changed = Self.nanoseconds(info.st_ctim)
    }

    /// The latest of the modification and change times, in nanoseconds.
    package var latestChange: Int64 { max(modified, changed) }

    /// Whether a file last changed at `latestChange` (ns) was so at least `racyWindow` before `time` (seconds).
    package static func settled(_ latestChange: Int64, before time: Double) -> Bool {
        latestChange < Int64(time * 1e9) - racyWindow
    }

    /// `inode:size:modified:changed`, as fingerprints and the state database keep it.
    package var description: String { "\(inode):\(size):\(modified):\(changed)" }

    /// Reads `description` back; nil for any other text.
    package init?(_ description: String) {
        let parts = description.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4, let inode = UInt64(parts[0]), let size = Int64(parts[1]), let modified = Int64(parts[2]),
              let changed = Int64(parts[3]) else { return nil }
        (self.inode, self.size, self.modified, self.changed) = (inode, size, modified, changed)
    }

    private static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
