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
package struct DiscoveredSource: Sendable {
    /// The source key: a file's absolute, normalized path; a URL's normalized form or explicit key.
    package let key: String
    package let origin: SourceOrigin
    /// The `{dir}` token: the file's folder relative to its source root (for a URL: host and folder).
    package let relativeDirectory: String
    /// Feeds `{stem}` and `{ext}`.
    package let fileName: String

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
                try expandGlob(pattern, visit)
            case .list(let listPath):
                try expandList(listPath, location: "sources[\(index)].list", visit)
            case .url(let url, let key, let headers):
                try visit(.remote(url, key: key, headers: headers))
            }
        }
    }

    package typealias Visitor = (DiscoveredSource) throws -> Void

    private static func expandPath(_ path: String, recursive: Bool, include: [String], exclude: [String],
                                   location: String, _ visit: Visitor) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw JobFileError(location, "\(path): \(String(cString: strerror(errno)))")
        }
        if (info.st_mode & S_IFMT) != S_IFDIR {
            try visit(.file(path, relativeDirectory: ""))
            return
        }
        try walk(path, relative: "", recursive: recursive) { name, relative in
            let wanted = include.contains { matches($0, name, caseInsensitive: true) }
                && !exclude.contains { matches($0, name, caseInsensitive: true) || matches($0, relative.isEmpty ? name : relative + "/" + name, caseInsensitive: true) }
            if wanted {
                try visit(.file(path + "/" + (relative.isEmpty ? name : relative + "/" + name),
                                   relativeDirectory: relative))
            }
        }
    }

    /// Visits the regular files below `root` (hidden entries skipped), sorted by name.
    private static func walk(_ root: String, relative: String, recursive: Bool,
                             _ visit: (_ name: String, _ relativeDirectory: String) throws -> Void) throws {
        let folder = relative.isEmpty ? root : root + "/" + relative
        for entry in listDirectory(folder) where !entry.name.hasPrefix(".") {
            if entry.isDirectory {
                if recursive {
                    try walk(root, relative: relative.isEmpty ? entry.name : relative + "/" + entry.name,
                             recursive: true, visit)
                }
            } else {
                try visit(entry.name, relative)
            }
        }
    }

    package struct DirectoryEntry {
        package let name: String
        package let isDirectory: Bool
    }

    /// readdir without a stat per entry where the file system reports the type.
    package static func listDirectory(_ path: String) -> [DirectoryEntry] {
        guard let handle = opendir(path) else { return [] }
        defer { closedir(handle) }
        var entries: [DirectoryEntry] = []
        while let entry = readdir(handle) {
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
        return entries.sorted { $0.name < $1.name }
    }

    package static func matches(_ pattern: String, _ name: String, caseInsensitive: Bool) -> Bool {
        fnmatch(pattern, name, caseInsensitive ? (1 << 4) /* FNM_CASEFOLD */ : 0) == 0
    }

    // MARK: Globs

    private static func expandGlob(_ pattern: String, _ visit: Visitor) throws {
        let segments = pattern.split(separator: "/").map(String.init)
        let firstWild = segments.firstIndex { $0.contains { "*?[".contains($0) } } ?? segments.count
        let root = "/" + segments[..<firstWild].joined(separator: "/")
        if firstWild == segments.count {
            if FileManager.default.fileExists(atPath: root) {
                try visit(.file(root, relativeDirectory: ""))
            }
            return
        }
        try matchGlob(Array(segments[firstWild...]), root: root, relative: "", visit)
    }

    private static func matchGlob(_ segments: [String], root: String, relative: String, _ visit: Visitor) throws {
        guard let segment = segments.first else { return }
        let rest = Array(segments.dropFirst())
        let folder = relative.isEmpty ? root : root + "/" + relative
        let entries = listDirectory(folder)
        func child(_ name: String) -> String { relative.isEmpty ? name : relative + "/" + name }
        if segment == "**" {
            try matchGlob(rest, root: root, relative: relative, visit)
            for entry in entries where entry.isDirectory && !entry.name.hasPrefix(".") {
                try matchGlob(segments, root: root, relative: child(entry.name), visit)
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
                try matchGlob(rest, root: root, relative: child(entry.name), visit)
            }
        }
    }

    // MARK: Lists

    private static func expandList(_ listPath: String, location: String, _ visit: Visitor) throws {
        // Read line by line: lists of hundreds of thousands of URLs never sit in memory as text.
        guard let file = fopen(listPath, "r") else {
            throw JobFileError(location, "cannot read list file \(listPath): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        let listFolder = Paths.directory(of: listPath)
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        while getline(&buffer, &capacity, file) >= 0, let buffer {
            let line = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if RemoteURL.looksRemote(line) {
                try visit(.remote(line, key: nil, headers: [:]))
                continue
            }
            let path = Paths.resolve(line, against: listFolder)
            let folder = Paths.directory(of: path)
            // Inside the list's folder `{dir}` is relative to it; elsewhere the absolute folder, minus its leading slash.
            let relative = Paths.relative(folder, to: listFolder) ?? Paths.droppingLeadingSlash(folder)
            try visit(.file(path, relativeDirectory: relative))
        }
    }
}
