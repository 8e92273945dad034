import Foundation

extension Job {
    /// Reads and validates a job file. Any problem is a `JobFileError` naming its exact location;
    /// nothing is touched on disk before the whole file has been accepted.
    public static func load(path: String) throws -> Job {
        let absolute = Paths.resolve(path, against: FileManager.default.currentDirectoryPath)
        guard let data = FileManager.default.contents(atPath: absolute) else {
            throw JobFileError("", "cannot read job file \(absolute)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw JobFileError("", "job file \(absolute) is not UTF-8 text")
        }
        return try parse(text: text, filePath: absolute)
    }

    public static func parse(text: String, filePath: String) throws -> Job {
        try checkNesting(text)
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            throw JobFileError("", "not valid JSON: \(describeJSONError(error))")
        }
        let root = try ObjectReader(document, path: "")
        let baseDirectory = Paths.directory(of: filePath)

        let version = try root.int("version")
        guard version == supportedVersion else {
            throw root.error("version", "version \(version) is not supported (this runner reads version \(supportedVersion))")
        }
        let defaultName = Paths.splitExtension(Paths.lastComponent(filePath)).stem
        let name = try root.string("name") ?? defaultName
        guard !name.isEmpty else { throw root.error("name", "must not be empty") }

        let sources = try readSources(root, baseDirectory: baseDirectory)
        let outputs = try readOutputs(root, baseDirectory: baseDirectory)
        let statePath = Paths.resolve(try root.string("state") ?? "\(defaultName).sqlite", against: baseDirectory)
        let concurrencySection = try root.object("concurrency")
        let limitsSection = try root.object("limits")
        let concurrency = try readConcurrency(concurrencySection)
        let limits = try readLimits(limitsSection)
        let remote = try readRemote(root, statePath: statePath, concurrency: concurrencySection, limits: limitsSection)
        // The kernel stops a path at a NUL: the database and the cache would land beside the named place.
        for (key, path) in [("state", statePath), ("cache", remote.cacheDirectory)] where path.utf8.contains(0) {
            throw root.error(key, "must not contain a NUL character")
        }
        try concurrencySection?.finish()
        try limitsSection?.finish()
        try root.finish()

        return Job(name: name, filePath: filePath, text: text, baseDirectory: baseDirectory, sources: sources,
                   outputs: outputs, concurrency: concurrency, limits: limits, statePath: statePath, remote: remote)
    }

    /// Deepest nesting of arrays and objects a job file may have (a job needs six or so).
    static let maxNesting = 32

    /// Decoding into `JSONValue` costs time in proportion to the square of the nesting depth (each
    /// level tries the scalar types first, and each failed try carries the whole coding path): a
    /// 200 KB file of arrays 400 deep took 100 s. One pass over the bytes refuses such files first.
    private static func checkNesting(_ text: String) throws {
        var depth = 0, inString = false, escaped = false
        for byte in text.utf8 {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maxNesting { throw JobFileError("", "not valid JSON: nested more than \(maxNesting) levels deep") }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
    }

    private static func readSources(_ root: ObjectReader, baseDirectory: String) throws -> [SourceSpec] {
        guard let elements = try root.array("sources") else { throw root.error("sources", "is required") }
        guard !elements.isEmpty else { throw root.error("sources", "must list at least one source") }
        return try elements.map { element in
            let source = try ObjectReader(element.value, path: element.path)
            let kinds = ["path", "glob", "list", "url"].filter(source.has)
            guard kinds.count == 1 else {
                throw JobFileError(element.path, "must have exactly one of path, glob, list, url")
            }
            let spec: SourceSpec
            switch kinds[0] {
            case "path":
                let path = try source.requiredString("path")
                try rejectURL(path, source.location("path"))
                try rejectNUL(path, source.location("path"))
                spec = .path(Paths.resolve(path, against: baseDirectory),
                             recursive: try source.bool("recursive", default: false),
                             include: try source.stringArray("include", default: defaultImagePatterns),
                             exclude: try source.stringArray("exclude", default: []))
            case "glob":
                let pattern = try source.requiredString("glob")
                try rejectURL(pattern, source.location("glob"))
                try rejectNUL(pattern, source.location("glob"))
                spec = .glob(Paths.resolve(pattern, against: baseDirectory))
            case "list":
                let list = try source.requiredString("list")
                try rejectNUL(list, source.location("list"))
                spec = .list(Paths.resolve(list, against: baseDirectory))
            default:
                let url = try source.requiredString("url")
                guard RemoteURL(url) != nil else {
                    throw source.error("url", "must be an absolute http:// or https:// URL")
                }
                spec = .url(url, key: try source.string("key"), headers: try readHeaders(source, "headers"))
            }
            try source.finish()
            return spec
        }
    }

    /// Patterns a folder source picks up when it names none (matched case-insensitively).
    static let defaultImagePatterns = ["*.jpg", "*.jpeg", "*.png", "*.webp", "*.tif", "*.tiff", "*.gif", "*.heic", "*.heif", "*.avif"]

    private static func rejectURL(_ text: String, _ location: String) throws {
        if text.contains("://") { throw JobFileError(location, "is a URL; use a \"url\" source") }
    }

    /// The kernel ends a path at a NUL: "photos\u0000x" would read photos, and a recursive walk of
    /// "\u0000" found the same folder under every name it listed, until the stack ran out.
    private static func rejectNUL(_ text: String, _ location: String) throws {
        if text.utf8.contains(0) { throw JobFileError(location, "must not contain a NUL character") }
    }

    private static func readOutputs(_ root: ObjectReader, baseDirectory: String) throws -> [OutputSpec] {
        guard let elements = try root.array("outputs") else { throw root.error("outputs", "is required") }
        guard !elements.isEmpty else { throw root.error("outputs", "must list at least one output") }
        var seen: Set<String> = []
        let context = OperationContext(baseDirectory: baseDirectory)
        return try elements.map { element in
            let output = try ObjectReader(element.value, path: element.path)
            let name = try output.requiredString("name")
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
                throw output.error("name", "may contain only letters, digits, '-', '_' and '.'")
            }
            guard seen.insert(name).inserted else { throw output.error("name", "\"\(name)\" is used by another output") }
            let template = try PathTemplate(try output.requiredString("path"), baseDirectory: baseDirectory,
                                            location: output.location("path"))
            guard let chainElements = try output.array("chain") else { throw output.error("chain", "is required") }
            let chain = try OperationChain.read(chainElements, context: context)
            guard let format = try output.object("format") else { throw output.error("format", "is required") }
            let encoder = try readEncoder(format)
            let autorotate = try output.bool("autorotate", default: true)
            let keepMetadata = try output.bool("keepMetadata", default: false)
            let keepIcc = try output.bool("keepIcc", default: false)
            let metadata: MetadataPolicy = keepMetadata ? .all : keepIcc ? .icc : .strip
            let colourSpace = try output.choice("colorspace", default: ColourSpacePolicy.srgb)
            let frames = try output.optionalInt("frames", .positive)
            try output.finish()
            return OutputSpec(name: name, template: template, chain: chain, encoder: encoder, autorotate: autorotate,
                              metadata: metadata, colourSpace: colourSpace, frames: frames)
        }
    }

    private static func readConcurrency(_ section: ObjectReader?) throws -> ConcurrencySettings {
        let settings = ConcurrencySettings(
            process: try section?.int("process", default: defaultWorkerCount, .range(1, 256)) ?? defaultWorkerCount,
            threadsPerImage: try section?.int("threadsPerImage", default: 1, .range(1, 64)) ?? 1,
            recycleAfter: try section?.int("recycleAfter", default: 1000, .positive) ?? 1000)
        return settings
    }

    public static var defaultWorkerCount: Int { ProcessInfo.processInfo.activeProcessorCount }

    private static func readLimits(_ section: ObjectReader?) throws -> Limits {
        let limits = Limits(
            maxPixels: try section?.int("maxPixels", default: defaultMaxPixels, .positive) ?? defaultMaxPixels,
            failOn: try section?.choice("failOn", default: FailOn.error) ?? .error,
            blockUntrustedLoaders: try section?.bool("blockUntrusted", default: true) ?? true,
            frames: try section?.int("frames", default: defaultMaxFrames, .positive) ?? defaultMaxFrames)
        return limits
    }

    /// sharp's `limitInputPixels` default: 16383 x 16383.
    public static let defaultMaxPixels = 268_402_689

    public static let defaultMaxFrames = 300
}

private func describeJSONError(_ error: any Error) -> String {
    if case DecodingError.dataCorrupted(let context) = error {
        if let underlying = context.underlyingError as NSError?,
           let detail = underlying.userInfo[NSDebugDescriptionErrorKey] as? String {
            return detail
        }
        return context.debugDescription
    }
    return "\(error)"
}
