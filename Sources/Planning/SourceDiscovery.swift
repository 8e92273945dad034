import Foundation
import Support
import Model
import Keys
import JobFile

/// A source found by expanding the job's `sources`: a local file or a remote address.
package struct DiscoveredSource: Sendable, Codable {
    /// The source key: a file's absolute, normalized path; a URL's normalized form or explicit key.
    package let key: String
    package let origin: SourceOrigin
    /// The `{dir}` token: the file's folder relative to its source root (for a URL: host and folder).
    package let relativeDirectory: String
    /// Feeds `{stem}` and `{ext}`.
    package let fileName: String
    /// What named it in the job, which alone makes it again (`SourceListing.source(at:)`).
    package var entry: SourceEntry? = nil

    /// This source as entry `line` of spec `spec` names it, as a listing's `discover` visits it.
    package func entered(spec: Int, line: String?) -> DiscoveredSource {
        var source = self
        source.entry = SourceEntry(spec: spec, line: line)
        return source
    }
}

/// A source as the job names it: its spec's index in `sources`, and `line`: a list's line (trimmed),
/// a walked file's path below the folder or the glob's fixed part, a bucket's key; nil for one named whole.
package struct SourceEntry: Sendable, Equatable, Codable {
    package let spec: Int
    package let line: String?

    package init(spec: Int, line: String?) { (self.spec, self.line) = (spec, line) }
}

/// Expands the job's `sources` in a stable order, each spec through its kind's listing
/// (`SourceSpec.listing`): folder and glob walks and list files are here.
package struct SourceDiscovery {
    /// Visits every source the specs name, in order, one at a time; errors name the spec's location
    /// (`sources[1].path`). `walked` hears of every path a walk looks at (`WalkedPath`).
    package static func discover(_ specs: [SourceSpec], walked: WalkObserver? = nil, _ visit: Visitor) throws {
        for (index, spec) in specs.enumerated() { try spec.listing.discover(spec: index, walked: walked, visit) }
    }

    /// A `path` spec: a file, or a folder walked for the files its filters pick.
    struct Folder: SourceListing {
        let root: String
        let recursive: Bool
        let include: [String]
        let exclude: [String]

        func discover(spec: Int, walked: WalkObserver?, _ visit: Visitor) throws {
            let walk = Walk(spec: spec, location: "sources[\(spec)].path", observe: walked)
            var info = stat()
            guard stat(root, &info) == 0 else {
                // A path of megabytes is no path (File name too long): the error quotes its start.
                throw JobFileError(walk.location, "\(Quoted.text(root)): \(String(cString: strerror(errno)))")
            }
            if (info.st_mode & S_IFMT) != S_IFDIR {
                try walk.observe?(WalkedPath(root, entryIsFolder: false))
                try visit(below(root, nil).entered(spec: spec, line: nil))
                return
            }
            let include = include.map { Wildcard($0, caseInsensitive: true) }, exclude = exclude.map { Wildcard($0, caseInsensitive: true) }
            try walkFolder(root, relative: "", recursive: recursive, walk, ancestors: []) { name, relative in
                let line = relative.isEmpty ? name : relative + "/" + name
                let wanted = include.contains { $0.matches(name) } && !exclude.contains { $0.matches(name) || $0.matches(line) }
                if wanted { try visit(below(root, line).entered(spec: spec, line: line)) }
            }
        }

        func source(at line: String?) -> DiscoveredSource? { below(root, line) }

        func addInputs(to hash: inout StableHash, latestChange: inout Int64) -> Bool {
            hash.combine("path")
            hash.combine(root)
            hash.combine(recursive ? "recursive" : "-")
            for filters in [include, exclude] {
                hash.combine(String(filters.count))
                for pattern in filters { hash.combine(pattern) }
            }
            return true
        }
    }

    /// A `glob` spec, its fixed part worked out once.
    struct Glob: SourceListing {
        let pattern: String
        /// The folder the first wildcard segment is matched in (the whole pattern when it has none),
        /// and the segments from that one on.
        private let root: String, wild: [String]

        init(_ pattern: String) {
            self.pattern = pattern
            let segments = pattern.split(separator: "/").map(String.init)
            let firstWild = segments.firstIndex { $0.contains { "*?[".contains($0) } } ?? segments.count
            (root, wild) = ("/" + segments[..<firstWild].joined(separator: "/"), Array(segments[firstWild...]))
        }

        func discover(spec: Int, walked: WalkObserver?, _ visit: Visitor) throws {
            let walk = Walk(spec: spec, location: "sources[\(spec)].glob", observe: walked)
            if wild.isEmpty {
                let seen = WalkedPath(kindAt: root)
                try walk.observe?(seen)
                if !seen.isMissing { try visit(below(root, nil).entered(spec: spec, line: nil)) }
                return
            }
            try matchGlob(wild, root: root, relative: "", walk, ancestors: [], visit)
        }

        func source(at line: String?) -> DiscoveredSource? { below(root, line) }

        func addInputs(to hash: inout StableHash, latestChange: inout Int64) -> Bool {
            hash.combine("glob")
            hash.combine(pattern)
            return true
        }
    }

    /// A `list` spec: a text file naming one source a line, known by its identity (`addInputs`).
    struct ListFile: SourceListing {
        let path: String

        var canNameTwice: Bool { true }

        func discover(spec: Int, walked: WalkObserver?, _ visit: Visitor) throws {
            // Read line by line: lists of hundreds of thousands of URLs never sit in memory as text.
            guard let file = fopen(path, "r") else {
                throw JobFileError("sources[\(spec)].list", "cannot read list file \(Quoted.text(path)): \(String(cString: strerror(errno)))")
            }
            defer { fclose(file) }
            let listFolder = Paths.directory(of: path)
            // Room for a line, its line feed and fgets' terminator, which lands in the last byte only when
            // fgets filled the buffer: the line then ends with its line feed before it, or is too long.
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: longestListLine + 2)
            defer { buffer.deallocate() }
            var number = 0
            while true {
                buffer[longestListLine + 1] = 1
                guard fgets(buffer, Int32(longestListLine + 2), file) != nil else { return }
                number += 1
                if buffer[longestListLine + 1] == 0 && buffer[longestListLine] != 0x0A {
                    throw JobFileError("sources[\(spec)].list", "line \(number) of \(Quoted.text(path)) is longer than "
                                       + "\(Quoted.bytes(longestListLine)), the longest a list line may be (a path or a URL)")
                }
                // The line break goes on bytes, so most lines need no trimming by Foundation; a NUL ends the line.
                var length = strlen(buffer)
                while length > 0 && (buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D) { length -= 1; buffer[length] = 0 }
                let line = RemoteURL.trimmed(Paths.name(cString: buffer), .whitespacesAndNewlines)
                guard let source = listed(line, listFolder: listFolder) else { continue }
                try visit(source.entered(spec: spec, line: line))
            }
        }

        func source(at line: String?) -> DiscoveredSource? {
            line.flatMap { listed($0, listFolder: Paths.directory(of: path)) }
        }

        func addInputs(to hash: inout StableHash, latestChange: inout Int64) -> Bool {
            guard let identity = FileIdentity(path: path) else { return false }
            latestChange = max(latestChange, identity.latestChange)
            hash.combine("list")
            hash.combine(path)
            hash.combine(identity.description)
            return true
        }
    }

    package typealias Visitor = (DiscoveredSource) throws -> Void
    package typealias WalkObserver = (WalkedPath) throws -> Void

    /// One `path` or `glob` spec being walked: where its errors point, and who hears what it reads.
    struct Walk {
        let spec: Int
        let location: String
        let observe: WalkObserver?
    }

    /// The file at `line` below `root` (the folder or the glob's fixed part), `root` itself for nil.
    private static func below(_ root: String, _ line: String?) -> DiscoveredSource {
        guard let line else { return .file(root, relativeDirectory: "") }
        let folder = line.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(decoding: line.utf8[..<$0], as: UTF8.self) } ?? ""
        return .file(root + "/" + line, relativeDirectory: folder)
    }

    /// Visits the regular files below `root` (hidden entries skipped), sorted by name. A folder
    /// already being walked further up (a symlink to itself or to a parent) is not walked again.
    private static func walkFolder(_ root: String, relative: String, recursive: Bool, _ walk: Walk, ancestors: Set<FolderID>,
                                   _ visit: (_ name: String, _ relativeDirectory: String) throws -> Void) throws {
        let folder = relative.isEmpty ? root : root + "/" + relative
        guard let (entries, id) = try listSourceFolder(folder, walk), !ancestors.contains(id) else { return }
        for entry in entries where !entry.name.hasPrefix(".") {
            if !entry.isDirectory {
                try visit(entry.name, relative)
            } else if recursive {
                try walkFolder(root, relative: relative.isEmpty ? entry.name : relative + "/" + entry.name,
                               recursive: true, walk, ancestors: ancestors.union([id]), visit)
            }
        }
    }

    /// A folder by device and inode, whatever path led to it.
    struct FolderID: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// The entries of a folder a source walks into, and which folder it is; nil when it vanished. One
    /// that cannot be listed is a job-file error: its files must never be taken for gone, or a prune
    /// would delete their outputs. The observer hears of the folder (its identity taken before its
    /// names are read, so a change meanwhile shows later) and of each symlink in it.
    private static func listSourceFolder(_ path: String, _ walk: Walk) throws -> ([DirectoryEntry], FolderID)? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            // Gone since its parent was listed (or never there, for a glob's fixed part): nothing to find.
            if (code == ENOENT || code == ENOTDIR) && !Paths.hasUnnamableBytes(path) {
                try walk.observe?(WalkedPath(path: path, seen: .absent))
                return nil
            }
            throw unlistable(path, location: walk.location, errno: code)
        }
        try walk.observe?(WalkedPath(path: path, seen: .read(FileIdentity(info))))
        guard let entries = readDirectory(path) else {
            if errno == ENOENT { return nil }
            throw unlistable(path, location: walk.location, errno: errno)
        }
        // A symlink to a folder stays one only while its target does, and a dangling one is a
        // file only until a folder appears there: no folder read here tells either. One to a file
        // is not recorded: a row per file in a tree of links (docs/SCALE.md, "A shard reuses its last plan").
        if let observe = walk.observe {
            for entry in entries where entry.isSymlink && (entry.isDirectory || !entry.resolves) {
                let link = path + "/" + entry.name
                try observe(entry.resolves ? WalkedPath(link, entryIsFolder: true) : WalkedPath(path: link, seen: .missing))
            }
        }
        return (entries, FolderID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
    }

    private static func unlistable(_ path: String, location: String, errno code: Int32) -> JobFileError {
        if code == ENOENT && Paths.hasUnnamableBytes(path) { return JobFileError(location, "\(path): \(Paths.unnamable)") }
        return JobFileError(location, "\(path): \(String(cString: strerror(code))) (a folder runner cannot list: fix its permissions, or move it out of the source)")
    }

    package struct DirectoryEntry {
        package let name: String
        /// Whether it is a folder, or a symlink to one.
        package let isDirectory: Bool
        package var isSymlink = false
        /// False for a symlink whose target cannot be `stat`ed (dangling, a loop).
        package var resolves = true
    }

    /// The hidden entries of a folder (stale temporaries), unsorted, no other name made: a rerun sweeps
    /// every output folder, 10M names at 10M items. Empty when the folder cannot be read.
    package static func hiddenEntries(_ path: String) -> [DirectoryEntry] {
        readDirectory(path, hiddenOnly: true) ?? []
    }

    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    private static let typeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!

    /// readdir without a stat per entry where the file system reports the type; sorted by name
    /// unless `hiddenOnly`. Nil, with `errno` set, when the folder cannot be opened.
    static func readDirectory(_ path: String, hiddenOnly: Bool = false) -> [DirectoryEntry]? {
        guard let handle = opendir(path) else { return nil }
        defer { closedir(handle) }
        var entries: [DirectoryEntry] = []
        while let entry = readdir(handle) {
            // Through pointers only: a record is as long as its name, so copying the struct (or its
            // 256-byte `d_name`) reads past it, off the end of readdir's buffer at worst (a segfault).
            let record = UnsafeRawPointer(entry)
            let nameStart = (record + nameOffset).assumingMemoryBound(to: CChar.self)
            if hiddenOnly && nameStart.pointee != 0x2E { continue }
            // A name whose bytes are not UTF-8 comes out with U+FFFD for them, and names nothing.
            let name = Paths.name(cString: nameStart)
            if name == "." || name == ".." { continue }
            let type = Int32(record.load(fromByteOffset: typeOffset, as: UInt8.self))
            var isDirectory = type == Int32(DT_DIR)
            var isSymlink = type == Int32(DT_LNK)
            var resolves = true
            if type == Int32(DT_UNKNOWN) || isSymlink {
                var info = stat()
                if !isSymlink {
                    isSymlink = lstat(path + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
                    isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
                }
                if isSymlink {
                    resolves = stat(path + "/" + name, &info) == 0
                    isDirectory = resolves && (info.st_mode & S_IFMT) == S_IFDIR
                }
            }
            entries.append(DirectoryEntry(name: name, isDirectory: isDirectory, isSymlink: isSymlink, resolves: resolves))
        }
        return hiddenOnly ? entries : entries.sorted { $0.name < $1.name }
    }

    // MARK: Globs

    private static func matchGlob(_ segments: [String], root: String, relative: String, _ walk: Walk,
                                  ancestors: Set<FolderID>, _ visit: Visitor) throws {
        guard let segment = segments.first else { return }
        let rest = Array(segments.dropFirst())
        let folder = relative.isEmpty ? root : root + "/" + relative
        // `**` walks every folder below once, never round a symlink loop.
        guard let (entries, id) = try listSourceFolder(folder, walk), !ancestors.contains(id) else { return }
        let inside = ancestors.union([id])
        func child(_ name: String) -> String { relative.isEmpty ? name : relative + "/" + name }
        if segment == "**" {
            try matchGlob(rest, root: root, relative: relative, walk, ancestors: ancestors, visit)
            for entry in entries where entry.isDirectory && !entry.name.hasPrefix(".") {
                try matchGlob(segments, root: root, relative: child(entry.name), walk, ancestors: inside, visit)
            }
            return
        }
        let wildcard = Wildcard(segment, caseInsensitive: false)
        for entry in entries {
            if entry.name.hasPrefix(".") && !segment.hasPrefix(".") { continue }
            guard wildcard.matches(entry.name) else { continue }
            if rest.isEmpty {
                if !entry.isDirectory { try visit(below(root, child(entry.name)).entered(spec: walk.spec, line: child(entry.name))) }
            } else if entry.isDirectory {
                try matchGlob(rest, root: root, relative: child(entry.name), walk, ancestors: inside, visit)
            }
        }
    }

    // MARK: Lists

    /// The longest list line read, 64 KiB: sixteen times PATH_MAX, eight times the longest URL most
    /// servers take; the buffer's size, so a file that is one endless line costs no more.
    package static let longestListLine = 64 << 10

    /// The source a list's line (trimmed) names; nil for a blank line or a comment.
    private static func listed(_ line: String, listFolder: String) -> DiscoveredSource? {
        if line.isEmpty || line.hasPrefix("#") { return nil }
        if RemoteURL.looksRemote(line) { return .remote(line, key: nil, headers: [:]) }
        let path = Paths.resolve(line, against: listFolder)
        let folder = Paths.directory(of: path)
        // Inside the list's folder `{dir}` is relative to it; elsewhere the absolute folder, minus its leading slash.
        let relative = Paths.relative(folder, to: listFolder) ?? String(decoding: folder.utf8.dropFirst(), as: UTF8.self)
        return .file(path, relativeDirectory: relative)
    }
}
