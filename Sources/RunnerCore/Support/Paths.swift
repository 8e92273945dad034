import Foundation

/// Lexical path arithmetic (no symlink resolution, no file system access).
enum Paths {
    /// `path` made absolute against `base`, with `.`, `..` and repeated slashes folded away.
    static func resolve(_ path: String, against base: String) -> String {
        normalize(path.hasPrefix("/") ? path : base + "/" + path)
    }

    static func normalize(_ path: String) -> String {
        if isNormal(path) { return path }
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Absolute, with no empty, `.` or `..` component and no trailing slash: what `normalize` makes.
    /// Planning checks every output path, and most are already normal.
    private static func isNormal(_ path: String) -> Bool {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        var bytes = path.utf8.makeIterator()
        guard bytes.next() == slash else { return false }
        var componentLength = 0
        var componentDots = 0
        func componentIsFine() -> Bool { componentLength > 0 && !(componentDots == componentLength && componentLength <= 2) }
        while let byte = bytes.next() {
            if byte == slash {
                guard componentIsFine() else { return false }
                componentLength = 0
                componentDots = 0
            } else {
                componentLength += 1
                if byte == dot { componentDots += 1 }
            }
        }
        return componentIsFine() || path == "/"
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func lastComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// `path` relative to `root` when it lies inside it, else nil.
    static func relative(_ path: String, to root: String) -> String? {
        if path == root { return "" }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil
    }

    /// How to get from the folder `base` to `path` (both absolute and normal), with `..` where needed.
    static func relative(_ path: String, from base: String) -> String {
        let from = base.split(separator: "/"), to = path.split(separator: "/")
        let common = zip(from, to).prefix { $0 == $1 }.count
        return (Array(repeating: "..", count: from.count - common) + to.dropFirst(common).map(String.init)).joined(separator: "/")
    }

    /// Splits `name.ext` into ("name", "ext"); a leading dot is part of the stem.
    static func splitExtension(_ fileName: String) -> (stem: String, ext: String) {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return (fileName, "") }
        return (String(fileName[..<dot]), String(fileName[fileName.index(after: dot)...]))
    }
}
