/// An output path such as `../out/thumbs/{dir}/{stem}.webp`.
///
/// Tokens: `{stem}`, `{ext}` (the source's name without and its extension), `{dir}` (the source's
/// folder relative to its source root), `{name}` (the output's name), `{key}` (a short stable hash
/// of the source key). Token values are sanitized and the result must stay inside `root`, the
/// folder the template's literal prefix names, so no source name can write elsewhere.
struct PathTemplate: Sendable {
    static let tokens: Set<String> = ["stem", "ext", "dir", "name", "key"]

    let written: String
    /// The template made absolute against the job's folder, tokens still in place.
    let absolute: String
    let root: String

    init(_ written: String, baseDirectory: String, location: String) throws {
        var scan = written[...]
        while let open = scan.firstIndex(of: "{") {
            guard let close = scan[open...].firstIndex(of: "}") else {
                throw JobFileError(location, "unclosed { in path template")
            }
            let token = String(scan[scan.index(after: open)..<close])
            guard Self.tokens.contains(token) else {
                throw JobFileError(location, "unknown token {\(token)} (known: {dir}, {ext}, {key}, {name}, {stem})")
            }
            scan = scan[scan.index(after: close)...]
        }
        guard !written.hasSuffix("/") else { throw JobFileError(location, "must name a file, not a folder") }
        self.written = written
        absolute = written.hasPrefix("/") ? written : baseDirectory + "/" + written
        let literal = absolute.prefix { $0 != "{" }
        root = Paths.normalize(Paths.directory(of: String(literal) + (literal.count == absolute.count ? "" : "x")))
    }

    struct Values {
        let stem: String
        let ext: String
        let dir: String
        let name: String
        let key: String
    }

    /// The concrete output path, or nil when the values would leave `root`.
    func expand(_ values: Values) -> String? {
        var result = ""
        var scan = absolute[...]
        while let open = scan.firstIndex(of: "{"), let close = scan[open...].firstIndex(of: "}") {
            result += scan[..<open]
            switch scan[scan.index(after: open)..<close] {
            case "stem": result += Self.component(values.stem)
            case "ext": result += Self.component(values.ext)
            case "dir": result += Self.folder(values.dir)
            case "name": result += Self.component(values.name)
            default: result += values.key
            }
            scan = scan[scan.index(after: close)...]
        }
        result += scan
        let path = Paths.normalize(result)
        guard let inside = Paths.relative(path, to: root), !inside.isEmpty else { return nil }
        return path
    }

    /// One path component: no separators, never `.` or `..`.
    private static func component(_ value: String) -> String {
        if !value.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 }) {
            return value == "." || value == ".." ? "_" : value
        }
        let cleaned = value.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "\0", with: "")
        return cleaned == "." || cleaned == ".." ? "_" : cleaned
    }

    /// A relative folder: empty, `.` and `..` segments dropped, never absolute.
    private static func folder(_ value: String) -> String {
        value.split(separator: "/").filter { $0 != "." && $0 != ".." }.joined(separator: "/")
    }
}
