import Support
import Keys
/// An output path such as `../out/thumbs/{dir}/{stem}.webp`.
///
/// Tokens (`{stem}`, `{ext}`, `{dir}`: the source's folder below its root, `{name}`, `{key}`: a hash of its
/// key, `{hash}`: of the output's bytes, see `hashSuffix`) are sanitized, and the result must stay inside
/// `root`, the folder the template's literal prefix names, so no source name writes elsewhere.
///
/// An `s3://BUCKET/...` template names objects: it is planned as the absolute path `/BUCKET/...`
/// (the same rules keep a source's name inside its root) and its paths carry the scheme again.
package struct PathTemplate: Sendable {
    package let root: String
    /// `s3:/` for an object template, before the `/BUCKET/...` it plans; empty for files.
    private let scheme: String

    package init(_ written: String, baseDirectory: String, location: String) throws {
        var written = written
        if let object = ObjectURL(written) {
            guard !object.key.isEmpty else { throw JobFileError(location, "must name an object below s3://\(object.bucket)/") }
            (scheme, written) = ("s3:/", "/" + written.dropFirst(ObjectURL.scheme.count))
        } else if ObjectURL.names(written) {
            throw JobFileError(location, "must be s3://BUCKET/KEY for an object, not \(Quoted.value(written))")
        } else {
            scheme = ""
        }
        let parsed = try Self.pieces(of: written, location: location)
        guard !written.hasSuffix("/") else { throw JobFileError(location, "must name a file, not a folder") }
        // The kernel would stop at a NUL: the file would land somewhere else than the root says.
        guard !written.utf8.contains(0) else { throw JobFileError(location, "must not contain a NUL character") }
        // The job's folder is text as it stands, braces and all: only the template has tokens.
        let folder = written.utf8.first == UInt8(ascii: "/") ? "" : baseDirectory + "/"
        let (leading, rest): (String, ArraySlice<Piece>) = if case .literal(let text) = parsed.first {
            (folder + text, parsed.dropFirst())
        } else {
            (folder, parsed[...])
        }
        pieces = (leading.isEmpty ? [] : [.literal(leading)]) + rest
        // The bytes decide {hash} only once rendered, so it is where the name's end can find it: in
        // the file's name, with nothing but text after it. A `{` in text always opens a token, so
        // the last `{hash}` of a planned path is this one, whatever the sources' names hold.
        if let place = pieces.firstIndex(of: .token(.hash)) {
            let after = pieces[(place + 1)...]
            guard after.count <= 1, case .literal(let suffix) = after.first ?? .literal(""), !suffix.contains("/") else {
                throw JobFileError(location, "{hash} must be in the file's name with only text after it ({stem}-{hash}.webp)")
            }
            hashSuffix = suffix
        } else {
            hashSuffix = nil
        }
        plannedRoot = Paths.normalize(Paths.directory(of: leading + (rest.isEmpty ? "" : "x")))
        root = scheme + plannedRoot
        // `{stem}.webp` and `a/b` end in text that fixes the extension (or its absence); `{stem}.{ext}`
        // and `{stem}_small` do not (a stem may hold a dot).
        let tail = if case .literal(let text) = pieces.last { text } else { "" }
        extensionVaries = !pieces.isEmpty && Paths.lastComponent(tail).utf8.count == tail.utf8.count && !tail.contains(".")
    }

    /// Whether the output file's extension comes from the source (a token at the end of its name),
    /// so the planner checks it for each item rather than the reader once for the template.
    package let extensionVaries: Bool

    /// The text after `{hash}`, for a template with one: such an output is planned at a path holding
    /// `{hash}` itself, and published at `named(_:hash:)`.
    package let hashSuffix: String?

    /// Whether it has `{key}`: planning hashes a source's key for it only then.
    package var namesKey: Bool { pieces.contains(.token(.key)) }

    /// Whether a source's name or key tells its path from another's: else every source writes one path.
    package var namesSource: Bool {
        pieces.contains { [.token(.stem), .token(.ext), .token(.dir), .token(.key)].contains($0) }
    }

    /// The digits `{hash}` stands for: `OutputFacts.shortHash`.
    package static let hashDigits = 8

    /// Where a rendered output of a `{hash}` template goes: `planned` with its `{hash}` written out.
    package func named(_ planned: String, hash: String) -> String {
        guard hashSuffix != nil, let token = planned.range(of: "{hash}", options: .backwards) else { return planned }
        return planned.replacingCharacters(in: token, with: hash)
    }

    /// The planned path a published `path` of this template was named from (`{hash}` in place of
    /// its digits), or nil when it cannot be one.
    package func planned(from path: String) -> String? {
        guard let suffix = hashSuffix, path.utf8.count >= suffix.utf8.count + Self.hashDigits, path.hasSuffix(suffix) else { return nil }
        let end = path.utf8.index(path.utf8.endIndex, offsetBy: -suffix.utf8.count)
        let start = path.utf8.index(end, offsetBy: -Self.hashDigits)
        guard path.utf8[start..<end].allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return String(path[..<start]) + "{hash}" + suffix
    }

    /// One stretch of the template: text as written, or a token's place.
    private enum Piece: Sendable, Equatable {
        case literal(String), token(Token)
    }

    private enum Token: String, Sendable {
        case stem, ext, dir, name, key, hash
    }

    /// The template made absolute against the job's folder, parsed once so that planning does not
    /// scan it again for every item.
    private let pieces: [Piece]
    /// `root` without the scheme: what an expanded path must stay inside.
    private let plannedRoot: String

    /// The template as it expands, written out: two templates with one identifier name every
    /// source's output alike (a `{` in text always opens a token, so tokens and text cannot blur).
    package var identifier: String {
        scheme + pieces.map { piece in
            switch piece {
            case .literal(let text): text
            case .token(let token): "{\(token.rawValue)}"
            }
        }.joined()
    }

    private static func pieces(of written: String, location: String) throws -> [Piece] {
        var pieces: [Piece] = []
        var scan = written[...]
        while let open = scan.firstIndex(of: "{") {
            guard let close = scan[open...].firstIndex(of: "}") else {
                throw JobFileError(location, "unclosed { in path template")
            }
            if open > scan.startIndex { pieces.append(.literal(String(scan[..<open]))) }
            let written = String(scan[scan.index(after: open)..<close])
            switch Token(rawValue: written) {
            case .hash? where pieces.contains(.token(.hash)): throw JobFileError(location, "{hash} may be given once")
            case let token?: pieces.append(.token(token))
            case nil:
                throw JobFileError(location, "unknown token {\(Quoted.text(written, limit: 60))} (known: {dir}, {ext}, {format}, {hash}, {key}, {name}, {stem}, {width})")
            }
            scan = scan[scan.index(after: close)...]
        }
        if !scan.isEmpty { pieces.append(.literal(String(scan))) }
        return pieces
    }

    package struct Values {
        package let stem: String
        package let ext: String
        package let dir: String
        package let name: String
        package let key: String

        /// The `{key}` token's value for a source key: 12 hex digits of its stable hash.
        package static func key(of sourceKey: String) -> String { String(StableHash.hex(sourceKey).prefix(12)) }

        package init(stem: String, ext: String, dir: String, name: String, key: String) {
            (self.stem, self.ext, self.dir, self.name, self.key) = (stem, ext, dir, name, key)
        }
    }

    /// The concrete output path, or nil when the values would leave `root`.
    package func expand(_ values: Values) -> String? {
        var result = ""
        for piece in pieces {
            switch piece {
            case .literal(let text): result += text
            case .token(.stem): result += Self.component(values.stem)
            case .token(.ext): result += Self.component(values.ext)
            case .token(.dir): result += Self.folder(values.dir)
            case .token(.name): result += Self.component(values.name)
            case .token(.key): result += values.key
            case .token(.hash): result += "{hash}"
            }
        }
        let path = Paths.normalize(result)
        guard let inside = Paths.relative(path, to: plannedRoot), !inside.isEmpty else { return nil }
        return scheme + path
    }

    /// One path component: no separators or NULs, never `.` or `..`. On bytes (see `Paths`).
    private static func component(_ value: String) -> String {
        let slash = UInt8(ascii: "/")
        var cleaned = value
        if value.utf8.contains(where: { $0 == slash || $0 == 0 }) {
            cleaned = String(decoding: value.utf8.compactMap { $0 == 0 ? nil : $0 == slash ? UInt8(ascii: "_") : $0 }, as: UTF8.self)
        }
        return cleaned.utf8.elementsEqual(".".utf8) || cleaned.utf8.elementsEqual("..".utf8) ? "_" : cleaned
    }

    /// A relative folder: empty, `.` and `..` segments and NULs dropped, never absolute. On bytes.
    private static func folder(_ value: String) -> String {
        let dot = UInt8(ascii: ".")
        if Paths.isNormalRelative(value) { return value }
        let segments = value.utf8.split(separator: UInt8(ascii: "/")).filter { segment in
            !(segment.allSatisfy { $0 == dot } && segment.count <= 2)
        }
        return String(decoding: Array(segments.map { $0.filter { $0 != 0 } }.joined(separator: [UInt8(ascii: "/")])), as: UTF8.self)
    }
}
