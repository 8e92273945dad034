import Foundation
import CSystem

/// `stat` for paths that come folder by folder: a folder seen twice in a row is opened once (`O_PATH`)
/// and its files looked up by name in it, so the kernel walks its path once, not once per file (those
/// walks were a third of an up-to-date shard rerun's CPU, with millions of cached dentries).
///
/// Answers as `stat(path)` would, folder permissions included. A folder renamed while held open is
/// still read until the paths move on: a plan reads a tree that may change under it either way. One
/// owner at a time.
package final class FolderStat {
    private struct Folder {
        let path: String
        /// `unopened` until the folder comes up a second time (a path's folder seen once is not
        /// opened: a list of files in different folders costs what `stat` does); `unopenable`
        /// once opening failed (its paths are `stat`ed whole, for `stat`'s own error).
        var descriptor: Int32
        static let unopened: Int32 = -1
        static let unopenable: Int32 = -2
    }

    private var folders: [Folder] = []
    private let capacity: Int
    private var nextReplaced = 0

    /// Holds up to `capacity` folders open: one per interleaved sequence of paths (one per output
    /// for the outputs of a source's items).
    package init(folders capacity: Int = 1) {
        self.capacity = max(1, capacity)
    }

    deinit {
        for folder in folders where folder.descriptor >= 0 { close(folder.descriptor) }
    }

    /// `stat(path, &info) == 0`, with `errno` set when false.
    package func stat(_ path: String, _ info: inout stat) -> Bool {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")), bytes.index(after: slash) != bytes.endIndex else {
            return wholePathStat(path, &info)
        }
        let nameOffset = bytes.distance(from: bytes.startIndex, to: slash) + 1
        let folderPath = slash == bytes.startIndex ? Substring("/") : path[..<slash]
        guard let index = folders.firstIndex(where: { $0.path == folderPath }) else {
            remember(Folder(path: String(folderPath), descriptor: Folder.unopened))
            return wholePathStat(path, &info)
        }
        if folders[index].descriptor == Folder.unopened {
            let descriptor = open(String(folderPath), csystem_o_path | O_DIRECTORY | O_CLOEXEC)
            folders[index].descriptor = descriptor >= 0 ? descriptor : Folder.unopenable
        }
        guard folders[index].descriptor >= 0 else { return wholePathStat(path, &info) }
        let descriptor = folders[index].descriptor
        return path.withCString { fstatat(descriptor, $0 + nameOffset, &info, 0) } == 0
    }

    private func remember(_ folder: Folder) {
        guard folders.count == capacity else { folders.append(folder); return }
        if folders[nextReplaced].descriptor >= 0 { close(folders[nextReplaced].descriptor) }
        folders[nextReplaced] = folder
        nextReplaced = (nextReplaced + 1) % capacity
    }
}

/// `stat` of the whole path (the method's name hides the function inside the class).
private func wholePathStat(_ path: String, _ info: inout stat) -> Bool {
    stat(path, &info) == 0
}
