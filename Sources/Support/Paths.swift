import Foundation

/// Lexical path arithmetic (no symlink resolution, no file system access), on bytes as the kernel
/// sees them: a slash followed by a combining mark is one Character to Swift but still a slash, so
/// Character-based splitting and prefix tests would let `..` through.
package enum Paths {
    private static let slash = UInt8(ascii: "/")
    private static let dot = UInt8(ascii: ".")

    /// `path` made absolute against `base`, with `.`, `..` and repeated slashes folded away.
    package static func resolve(_ path: String, against base: String) -> String {
        normalize(path.utf8.first == slash ? path : base + "/" + path)
    }

    package static func normalize(_ path: String) -> String {
        if isNormal(path) { return path }
        var parts: [Substring.UTF8View] = []
        for part in path.utf8.split(separator: slash, omittingEmptySubsequences: true) {
            if part.count == 1 && part.first == dot { continue }
            if part.count == 2 && part.first == dot && part.last == dot {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(part)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(path.utf8.count)
        for part in parts {
            bytes.append(slash)
            bytes.append(contentsOf: part)
        }
        return bytes.isEmpty ? "/" : String(decoding: bytes, as: UTF8.self)
    }

    /// Absolute, with no empty, `.` or `..` component and no trailing slash: what `normalize` makes.
    /// Planning checks every output path, and most are already normal.
    private static func isNormal(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { bytes in
            guard bytes.first == slash else { return false }
            return bytes.count == 1 || componentsAreNormal(UnsafeBufferPointer(rebasing: bytes.dropFirst()), allowingNUL: true)
        }
    }

    /// Relative, with no empty, `.` or `..` component, no leading or trailing slash and no NUL (or
    /// empty): a `{dir}` value that needs no cleaning.
    package static func isNormalRelative(_ path: String) -> Bool {
        var path = path
        return path.isEmpty || path.withUTF8 { componentsAreNormal($0, allowingNUL: false) }
    }

    /// Every slash-separated component of `bytes` is non-empty and neither `.` nor `..` (nor holds a
    /// NUL, unless `allowingNUL`).
    private static func componentsAreNormal(_ bytes: UnsafeBufferPointer<UInt8>, allowingNUL: Bool) -> Bool {
        var componentLength = 0
        var componentDots = 0
        func componentIsFine() -> Bool { componentLength > 0 && !(componentDots == componentLength && componentLength <= 2) }
        for byte in bytes {
            if byte == slash {
                guard componentIsFine() else { return false }
                componentLength = 0
                componentDots = 0
            } else {
                guard allowingNUL || byte != 0 else { return false }
                componentLength += 1
                if byte == dot { componentDots += 1 }
            }
        }
        return componentIsFine()
    }

    package static func directory(of path: String) -> String {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: slash) else { return "." }
        return slash == bytes.startIndex ? "/" : String(decoding: bytes[..<slash], as: UTF8.self)
    }

    package static func lastComponent(_ path: String) -> String {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: slash) else { return path }
        return String(decoding: bytes[bytes.index(after: slash)...], as: UTF8.self)
    }

    /// `path` relative to `root` when it lies inside it, else nil. Byte for byte: Swift's `==`
    /// and `hasPrefix` compare canonically equivalent strings as equal, file systems do not.
    package static func relative(_ path: String, to root: String) -> String? {
        var path = path, root = root
        return path.withUTF8 { pathBytes in
            root.withUTF8 { rootBytes -> String? in
                // memcmp on the bytes (a canonically equivalent name is another name).
                func same(_ count: Int) -> Bool { count == 0 || memcmp(pathBytes.baseAddress!, rootBytes.baseAddress!, count) == 0 }
                if pathBytes.count == rootBytes.count && same(rootBytes.count) { return "" }
                let rootEndsWithSlash = rootBytes.last == slash
                let prefixLength = rootBytes.count + (rootEndsWithSlash ? 0 : 1)
                guard pathBytes.count >= prefixLength, same(rootBytes.count),
                      rootEndsWithSlash || pathBytes[rootBytes.count] == slash else { return nil }
                return String(decoding: UnsafeBufferPointer(rebasing: pathBytes[prefixLength...]), as: UTF8.self)
            }
        }
    }

    /// How to get from the folder `base` to `path` (both absolute and normal), with `..` where needed.
    /// On bytes; a path inside `base` (a manifest's million outputs) takes no split at all.
    package static func relative(_ path: String, from base: String) -> String {
        if let inside = relative(path, to: base) { return inside }
        let from = base.utf8.split(separator: slash), to = path.utf8.split(separator: slash)
        let common = zip(from, to).prefix { $0.elementsEqual($1) }.count
        let down = to.dropFirst(common).map { String(decoding: $0, as: UTF8.self) }
        return (Array(repeating: "..", count: from.count - common) + down).joined(separator: "/")
    }

    /// Splits `name.ext` into ("name", "ext"); a leading dot is part of the stem.
    package static func splitExtension(_ fileName: String) -> (stem: String, ext: String) {
        let bytes = fileName.utf8
        guard let dot = bytes.lastIndex(of: dot), dot != bytes.startIndex else { return (fileName, "") }
        return (String(decoding: bytes[..<dot], as: UTF8.self), String(decoding: bytes[bytes.index(after: dot)...], as: UTF8.self))
    }

    /// A name read from the disk (a folder's entry, a list's line): its bytes as UTF-8, where each
    /// byte that is not comes out as U+FFFD and the byte in two hex digits (`caf\u{FFFD}E9.jpg`),
    /// so names that differ only in such bytes stay apart (each its own source key and item).
    package static func name(cString: UnsafePointer<CChar>) -> String {
        if let valid = String(validatingCString: cString) { return valid }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self), count: strlen(cString))
        var name = "", parser = Unicode.UTF8.ForwardParser(), remaining = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &remaining) {
            case .valid(let encoded):
                name.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<offset + length] { name += "\u{FFFD}" + String(byte, radix: 16, uppercase: true) }
                offset += length
            case .emptyInput: return name
            }
        }
    }

    /// Such a name names nothing when it is not found: runner keeps paths as UTF-8 (in JSON,
    /// SQLite and templates), so it cannot name that file.
    package static func hasUnnamableBytes(_ path: String) -> Bool { path.unicodeScalars.contains("\u{FFFD}") }

    package static let unnamable = "its name is not valid UTF-8, so runner cannot name it (rename it)"
}
