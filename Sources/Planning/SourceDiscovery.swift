import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Keys
import Imaging
import Manifest

/// A source found by expanding the job's `sources`: a local file or a remote address.
package struct DiscoveredSource: Sendable, Codable {
    /// The source key: a file's absolute, normalized path; a URL's normalized form or explicit key.
    package let key: String
    package let origin: SourceOrigin
    /// The `{dir}` token: the file's folder relative to its source root (for a URL: host and folder).
    package let relativeDirectory: String
    /// Feeds `{stem}` and `{ext}`.
    package let fileName: String
    /// What named it in the job, when that alone makes it again (`SourceDiscovery.rediscover`): a
    /// list's line or an inline URL; nil for a folder's or a glob's file.
    package var entry: SourceEntry? = nil

    package static func file(_ path: String, relativeDirectory: String) -> DiscoveredSource {
        DiscoveredSource(key: path, origin: .file(path), relativeDirectory: relativeDirectory,
                         fileName: Paths.lastComponent(path))
    }

    package static func remote(_ text: String, key: String?, headers: [String: String]) -> DiscoveredSource {
        // An address curl will reject (malformed, other scheme) still becomes an item, so it fails
        // as such and is blacklisted instead of stopping a list of thousands.
        let parsed = RemoteURL(text)
        return DiscoveredSource(key: key ?? parsed?.normalized ?? text,
                                origin: .remote(RemoteSource(url: parsed?.normalized ?? text, headers: headers)),
                                relativeDirectory: parsed?.folder ?? "", fileName: parsed?.fileName ?? "index")
    }
}

/// A source as the job names it: the index of its spec in `sources`, and for a list the line (trimmed).
package struct SourceEntry: Sendable, Equatable, Codable {
    package let spec: Int
    package let line: String?

    package init(spec: Int, line: String?) {
        self.spec = spec
        self.line = line
    }
}

package enum SourceOrigin: Sendable, Equatable, Codable {
    case file(String)
    case remote(RemoteSource)
}

package struct RemoteSource: Sendable, Equatable, Codable {
    package let url: String
    /// The source's own headers, on top of `http.headers`.
    package let headers: [String: String]
}

/// Expands `path`, `glob` and `list` sources into files, in a stable order.
package struct SourceDiscovery {
    /// Visits every source the specs name, in order, one at a time (a list of a million URLs is
    /// never held whole); errors name the spec's location (`sources[1].path`).
    package static func discover(_ specs: [SourceSpec], _ visit: Visitor) throws {
        for (index, spec) in specs.enumerated() {
            switch spec {
            case .path(let path, let recursive, let include, let exclude):
                try expandPath(path, recursive: recursive, include: include, exclude: exclude,
                               location: "sources[\(index)].path", visit)
            case .glob(let pattern):
                try expandGlob(pattern, location: "sources[\(index)].glob", visit)
            case .list(let listPath):
                try expandList(listPath, spec: index, visit)
            case .url:
                if let source = rediscover(SourceEntry(spec: index, line: nil), in: specs) { try visit(source) }
            }
        }
    }

    /// The source `entry` names, made as discovery makes it (a plan that reuses its last one's
    /// sources rebuilds them here); nil when the line names nothing or the spec is of another kind.
    package static func rediscover(_ entry: SourceEntry, in specs: [SourceSpec]) -> DiscoveredSource? {
        guard specs.indices.contains(entry.spec) else { return nil }
        var source: DiscoveredSource?
        switch (specs[entry.spec], entry.line) {
        case (.url(let url, let key, let headers), nil): source = .remote(url, key: key, headers: headers)
        case (.list(let listPath), let line?): source = listed(line, listFolder: Paths.directory(of: listPath))
        default: source = nil
        }
        source?.entry = entry
        return source
    }

    package typealias Visitor = (DiscoveredSource) throws -> Void

    private static func expandPath(_ path: String, recursive: Bool, include: [String], exclude: [String],
                                   location: String, _ visit: Visitor) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            // A path of megabytes is no path (File name too long): the error quotes its start.
            throw JobFileError(location, "\(Quoted.text(path)): \(String(cString: strerror(errno)))")
        }
        if (info.st_mode & S_IFMT) != S_IFDIR {
            try visit(.file(path, relativeDirectory: ""))
            return
        }
        try walk(path, relative: "", recursive: recursive, location: location, ancestors: []) { name, relative in
            let wanted = include.contains { matches($0, name, caseInsensitive: true) }
                && !exclude.contains { matches($0, name, caseInsensitive: true) || matches($0, relative.isEmpty ? name : relative + "/" + name, caseInsensitive: true) }
            if wanted {
                try visit(.file(path + "/" + (relative.isEmpty ? name : relative + "/" + name),
                                   relativeDirectory: relative))
            }
        }
    }

    /// Visits the regular files below `root` (hidden entries skipped), sorted by name. A folder
    /// already being walked further up (a symlink to itself or to a parent) is not walked again.
    private static func walk(_ root: String, relative: String, recursive: Bool, location: String, ancestors: Set<FolderID>,
                             _ visit: (_ name: String, _ relativeDirectory: String) throws -> Void) throws {
        let folder = relative.isEmpty ? root : root + "/" + relative
        guard let (entries, id) = try listSourceFolder(folder, location: location), !ancestors.contains(id) else { return }
        for entry in entries where !entry.name.hasPrefix(".") {
            if entry.isDirectory {
                if recursive {
                    try walk(root, relative: relative.isEmpty ? entry.name : relative + "/" + entry.name,
                             recursive: true, location: location, ancestors: ancestors.union([id]), visit)
                }
            } else {
                try visit(entry.name, relative)
            }
        }
    }

    /// A folder by device and inode, whatever path led to it.
    struct FolderID: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// The entries of a folder a source walks into, and which folder it is; nil when it vanished
    /// since it was listed. A folder that cannot be listed (permission denied, a name that is not
    /// UTF-8) is a job-file error: its files must never be taken for gone, or a prune would delete
    /// their outputs.
    private static func listSourceFolder(_ path: String, location: String) throws -> ([DirectoryEntry], FolderID)? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            // Gone since its parent was listed (or never there, for a glob's fixed part): nothing to find.
            if (code == ENOENT || code == ENOTDIR) && !Paths.hasUnnamableBytes(path) { return nil }
            throw unlistable(path, location: location, errno: code)
        }
        switch readDirectory(path) {
        case .success(let entries): return (entries, FolderID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
        case .failure(let error) where error.code == ENOENT: return nil
        case .failure(let error): throw unlistable(path, location: location, errno: error.code)
        }
    }

    private static func unlistable(_ path: String, location: String, errno code: Int32) -> JobFileError {
        if code == ENOENT && Paths.hasUnnamableBytes(path) {
            return JobFileError(location, "\(path): \(Paths.unnamable)")
        }
        return JobFileError(location, "\(path): \(String(cString: strerror(code))) (a folder runner cannot list: fix its permissions, or move it out of the source)")
    }

    package struct DirectoryEntry {
        package let name: String
        package let isDirectory: Bool
    }

    /// The hidden entries of a folder (stale temporaries are hidden), unsorted, and no name made
    /// of any other: a rerun sweeps every output folder, 10,000,000 names at 10M items; empty
    /// when the folder cannot be read.
    package static func hiddenEntries(_ path: String) -> [DirectoryEntry] {
        (try? readDirectory(path, hiddenOnly: true).get()) ?? []
    }

    struct ReadError: Error {
        let code: Int32
    }

    /// readdir without a stat per entry where the file system reports the type; sorted by name
    /// unless `hiddenOnly`.
    static func readDirectory(_ path: String, hiddenOnly: Bool = false) -> Result<[DirectoryEntry], ReadError> {
        guard let handle = opendir(path) else { return .failure(ReadError(code: errno)) }
        defer { closedir(handle) }
        var entries: [DirectoryEntry] = []
        while let entry = readdir(handle) {
            if hiddenOnly && entry.pointee.d_name.0 != 0x2E { continue }
            // A name whose bytes are not UTF-8 comes out with U+FFFD in their place, and names nothing.
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            var isDirectory = Int32(entry.pointee.d_type) == Int32(DT_DIR)
            if Int32(entry.pointee.d_type) == Int32(DT_UNKNOWN) || Int32(entry.pointee.d_type) == Int32(DT_LNK) {
                var info = stat()
                isDirectory = stat(path + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            }
            entries.append(DirectoryEntry(name: name, isDirectory: isDirectory))
        }
        return .success(hiddenOnly ? entries : entries.sorted { $0.name < $1.name })
    }

    package static func matches(_ pattern: String, _ name: String, caseInsensitive: Bool) -> Bool {
        fnmatch(pattern, name, caseInsensitive ? (1 << 4) /* FNM_CASEFOLD */ : 0) == 0
    }

    // MARK: Globs

    private static func expandGlob(_ pattern: String, location: String, _ visit: Visitor) throws {
        let segments = pattern.split(separator: "/").map(String.init)
        let firstWild = segments.firstIndex { $0.contains { "*?[".contains($0) } } ?? segments.count
        let root = "/" + segments[..<firstWild].joined(separator: "/")
        if firstWild == segments.count {
            if FileManager.default.fileExists(atPath: root) {
                try visit(.file(root, relativeDirectory: ""))
            }
            return
        }
        try matchGlob(Array(segments[firstWild...]), root: root, relative: "", location: location, ancestors: [], visit)
    }

    private static func matchGlob(_ segments: [String], root: String, relative: String, location: String,
                                  ancestors: Set<FolderID>, _ visit: Visitor) throws {
        guard let segment = segments.first else { return }
        let rest = Array(segments.dropFirst())
        let folder = relative.isEmpty ? root : root + "/" + relative
        // `**` walks every folder below once, never round a symlink loop.
        guard let (entries, id) = try listSourceFolder(folder, location: location), !ancestors.contains(id) else { return }
        let inside = ancestors.union([id])
        func child(_ name: String) -> String { relative.isEmpty ? name : relative + "/" + name }
        if segment == "**" {
            try matchGlob(rest, root: root, relative: relative, location: location, ancestors: ancestors, visit)
            for entry in entries where entry.isDirectory && !entry.name.hasPrefix(".") {
                try matchGlob(segments, root: root, relative: child(entry.name), location: location, ancestors: inside, visit)
            }
            return
        }
        for entry in entries {
            if entry.name.hasPrefix(".") && !segment.hasPrefix(".") { continue }
            guard matches(segment, entry.name, caseInsensitive: false) else { continue }
            if rest.isEmpty {
                if !entry.isDirectory {
                    try visit(.file(folder + "/" + entry.name, relativeDirectory: relative))
                }
            } else if entry.isDirectory {
                try matchGlob(rest, root: root, relative: child(entry.name), location: location, ancestors: inside, visit)
            }
        }
    }

    // MARK: Lists

    private static func expandList(_ listPath: String, spec: Int, _ visit: Visitor) throws {
        // Read line by line: lists of hundreds of thousands of URLs never sit in memory as text.
        guard let file = fopen(listPath, "r") else {
            throw JobFileError("sources[\(spec)].list", "cannot read list file \(Quoted.text(listPath)): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        let listFolder = Paths.directory(of: listPath)
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        while case var length = getline(&buffer, &capacity, file), length >= 0, let buffer {
            // The line break goes on bytes, so most lines need no trimming by Foundation.
            while length > 0 && (buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D) { length -= 1; buffer[length] = 0 }
            let line = RemoteURL.trimmed(String(cString: buffer), .whitespacesAndNewlines)
            guard var source = listed(line, listFolder: listFolder) else { continue }
            source.entry = SourceEntry(spec: spec, line: line)
            try visit(source)
        }
    }

    /// The source a list's line (trimmed) names; nil for a blank line or a comment.
    private static func listed(_ line: String, listFolder: String) -> DiscoveredSource? {
        if line.isEmpty || line.hasPrefix("#") { return nil }
        if RemoteURL.looksRemote(line) { return .remote(line, key: nil, headers: [:]) }
        let path = Paths.resolve(line, against: listFolder)
        let folder = Paths.directory(of: path)
        // Inside the list's folder `{dir}` is relative to it; elsewhere the absolute folder, minus its leading slash.
        let relative = Paths.relative(folder, to: listFolder) ?? Paths.droppingLeadingSlash(folder)
        return .file(path, relativeDirectory: relative)
    }
}
