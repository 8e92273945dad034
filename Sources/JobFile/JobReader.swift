import Foundation
import Support
import ObjectStore
import Model
import Keys
import Imaging

extension Job {
    /// The largest job file runner reads, 16 MiB: a thousand times a long job written by hand. A long
    /// list of sources belongs in a `list` file, which is read a line at a time.
    package static let largestFile = 16 << 20

    /// Reads and validates a job file. Any problem is a `JobFileError` naming its exact location;
    /// nothing is touched on disk before the whole file has been accepted.
    public static func load(path: String) throws -> Job {
        // Relative paths are taken from the working folder: the error says the path as resolved.
        let absolute = Paths.resolve(path, against: FileManager.default.currentDirectoryPath)
        let data: Data
        do {
            data = try FileDescriptor.readWhole(absolute, limit: largestFile)
        } catch {
            let reason = switch error {
            case .failed(ENOENT): "no such file"
            case .failed(EISDIR): "it is a folder"
            case .failed: error.description
            case .tooLarge: "\(error): long lists of sources belong in a list file ({\"list\": \"photos.txt\"}, one path or URL a line)"
            }
            throw JobFileError("", "cannot read job file \(absolute): \(reason)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw JobFileError("", "job file \(absolute) is not UTF-8 text")
        }
        do {
            return try parse(text: text, filePath: absolute)
        } catch let error as JobFileError {
            throw error.located(in: text)
        }
    }

    public static func parse(text: String, filePath: String) throws -> Job {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: text)
        } catch where error.isTooDeep {
            throw JobFileError("", "not valid JSON: " + error.message)
        } catch {
            throw JobFileError(syntax: error)
        }
        let root = try ObjectReader(document, path: "", shape: shape)
        _ = try root.optional(Keys.schema)
        let baseDirectory = Paths.directory(of: filePath)

        _ = try root.read(Keys.version)
        let defaultName = Paths.splitExtension(Paths.lastComponent(filePath)).stem
        let name = try root.optional(Keys.name) ?? defaultName

        // The job's `retry`, which every request to an origin or a store follows (a bucket's listing too).
        let retrySection = try root.object(RemoteSettings.Keys.retry)
        let retry = RetryPolicy(attempts: try retrySection.read(RemoteSettings.Keys.attempts),
                                initialDelay: try retrySection.read(RemoteSettings.Keys.initialDelay),
                                maxDelay: try retrySection.read(RemoteSettings.Keys.maxDelay))
        try retrySection.finish()
        let sources = try readSources(root, baseDirectory: baseDirectory, retry: retry)
        let outputs = try readOutputs(root, baseDirectory: baseDirectory, retry: retry)
        let derive = try root.read(Keys.derive)
        let statePath = Paths.resolve(try root.optional(Keys.state) ?? "\(defaultName).sqlite", against: baseDirectory)
        let concurrencySection = try root.object(Keys.concurrency)
        let limitsSection = try root.object(Keys.limits)
        let concurrency = ConcurrencySettings(
            process: try concurrencySection.optional(Concurrency.process) ?? ProcessInfo.processInfo.activeProcessorCount,
            threadsPerImage: try concurrencySection.read(Concurrency.threadsPerImage),
            recycleAfter: try concurrencySection.read(Concurrency.recycleAfter))
        let limits = Limits(maxPixels: try limitsSection.read(Limit.maxPixels), failOn: try limitsSection.read(Limit.failOn),
                            blockUntrustedLoaders: try limitsSection.read(Limit.blockUntrusted), frames: try limitsSection.read(Limit.frames),
                            maxMemory: try limitsSection.read(Limit.maxMemory), itemTimeout: try limitsSection.read(Limit.itemTimeout))
        let remote = try readRemote(root, statePath: statePath, concurrency: concurrencySection, limits: limitsSection, retry: retry)
        let manifest = try SiteManifestSettings.read(root, jobFile: filePath, baseDirectory: baseDirectory,
                                                     roots: outputs.map { ($0.location, $0.template.root) },
                                                     statePath: statePath)
        let stateBucket = try readStateBucket(root)
        let keepReplaced = try root.read(Keys.keepReplaced)
        // The kernel stops a path at a NUL: the database and the cache would land beside the named place.
        for (key, path) in [(Keys.state, statePath), (RemoteSettings.Keys.cache, remote.cacheDirectory)] where path.utf8.contains(0) {
            throw root.error(key, "must not contain a NUL character")
        }
        try concurrencySection.finish()
        try limitsSection.finish()
        try root.finish()

        return Job(name: name, filePath: filePath, text: text, baseDirectory: baseDirectory, sources: sources,
                   outputs: outputs, derive: derive, manifest: manifest, concurrency: concurrency, limits: limits, statePath: statePath, remote: remote, stateBucket: stateBucket, keepReplaced: keepReplaced)
    }

    package enum StateBucketKeys {
        package static let s3 = Key.text("s3", .required,
            "Where the run's state database is kept between runs, s3://BUCKET/PREFIX/: the database's own file name below it (a shard's its own).")
        package static let checkpoint = Key.integer("checkpoint", .positive, .defaults(300),
            "Seconds between copies written to the bucket while a run goes on; a pod killed in between loses only the records since the last.")
        package static let key = ObjectKey("stateBucket", .fixed(ObjectShape([s3, Source.endpoint, Source.region, Source.addressing, checkpoint])),
            "Keep the state database in a bucket (a Kubernetes pod without a persistent volume): fetched before a run (unless the local copy "
                + "is the one last written there), written back at checkpoints and at the end, only over the version fetched: of two runs "
                + "of one shard, the second to write stops with exit 75.")
    }

    private static func readStateBucket(_ root: ObjectReader) throws -> StateBucketSettings? {
        guard root.has(StateBucketKeys.key) else { return nil }
        let section = try root.object(StateBucketKeys.key)
        let written = try section.read(StateBucketKeys.s3)
        guard let place = ObjectURL(written) else {
            throw section.error(StateBucketKeys.s3, "must be s3://BUCKET/PREFIX/ (the prefix may be empty), not \(Quoted.value(written))")
        }
        let folder = place.key.isEmpty || place.key.hasSuffix("/") ? place.key : place.key + "/"
        let settings = StateBucketSettings(endpoint: try store(section), folder: ObjectURL(bucket: place.bucket, key: folder),
                                           checkpoint: Double(try section.read(StateBucketKeys.checkpoint)))
        try section.finish()
        return settings
    }

    /// Every key of a version 1 job file. The reader reads through these declarations and
    /// `runner schema` renders them (`JobSchema`), so the two say the same.
    package enum Keys {
        package static let schema = Key.text("$schema", .optional(),
            "The JSON Schema an editor checks this file with, such as \"./runner.schema.json\" after `runner schema > runner.schema.json`. Ignored by runner.")
        package static let version = Key<Int>("version", .required, "The job file format; this runner reads version 1.",
                                      schema: ["type": "integer", "const": .number(Double(supportedVersion))],
                                      written: { .number(Double($0)) }) { value, location in
            let version = try Key.integer("version", .any, .required, "").decode(value, location)
            guard version == supportedVersion else {
                throw JobFileError(location, "version \(version) is not supported (this runner reads version \(supportedVersion))")
            }
            return version
        }
        package static let name = Key.text("name", .optional("the job file's name without .json"), "Shown in progress lines and reports.")
        package static let sources = ListKey("sources", of: .fixed(Source.shape), nonEmpty: "source",
                                     "Where images come from: each source has exactly one of path, glob, list, url, s3.")
        package static let outputs = ListKey("outputs", of: .fixed(Output.shape), nonEmpty: "output", "What to make of each source.")
        package static let derive = DerivedValues.key("derive",
            "Values computed per source from its pixels: \(derivedValueNames). "
                + "Each element is a name, or an object naming it in \"value\" with its settings; each at most once.")
        package static let state = Key.text("state", .optional("<job file name>.sqlite beside the job file"),
                                    "The state database, relative to the job file; its lock is STATE.lock.")
        package static let keepReplaced = Key.duration("keepReplaced", .defaults(7 * 86_400),
            "How long an output's old file (a {hash} name whose bytes changed, a block width a source no longer reaches, a moved output) is kept after the manifest that stops naming it is published (after the run, without a manifest), so a site deployed from the previous manifest keeps working; \"0s\" removes it then. runner prune lists them; runs and prune --delete remove them once past it.")
        package static let concurrency = ObjectKey("concurrency", .fixed(ObjectShape([
            Concurrency.process, Concurrency.threadsPerImage, Concurrency.recycleAfter,
            RemoteSettings.Keys.download, RemoteSettings.Keys.perHost,
        ])), "How much runs at once.")
        package static let limits = ObjectKey("limits", .fixed(ObjectShape([
            Limit.maxPixels, Limit.failOn, Limit.blockUntrusted, Limit.frames, Limit.maxMemory, Limit.itemTimeout,
            RemoteSettings.Keys.maxDownloadBytes,
        ])), "Guards against hostile or damaged sources.")
    }

    /// The top level of a job file.
    package static let shape = ObjectShape([
        Keys.schema, Keys.version, Keys.name, Keys.sources, Keys.outputs, Keys.derive, SiteManifestSettings.key, Keys.state, Keys.keepReplaced, StateBucketKeys.key,
        Keys.concurrency, Keys.limits,
        RemoteSettings.Keys.http, RemoteSettings.Keys.retry, RemoteSettings.Keys.blacklist,
        RemoteSettings.Keys.cache, RemoteSettings.Keys.cacheMaxBytes,
    ])

    package enum Source {
        package static let path = Key.text("path", .optional(),
            "A file, or a folder whose files match include and no exclude pattern; relative to the job file. Hidden files are skipped.")
        package static let recursive = Key.flag("recursive", default: false, "Walk the folder's subfolders too.")
        package static let include = Key.strings("include", .defaults(defaultImagePatterns),
                                         "Patterns a folder's files must match (case-insensitive).")
        package static let exclude = Key.strings("exclude", .defaults([]),
                                         "Patterns that leave files out (case-insensitive; also matched against the path relative to the folder).")
        package static let glob = Key.text("glob", .optional(),
                                   "A pattern with *, ?, [...] and ** (any number of folders), e.g. photos/**/*.jpg.")
        package static let list = Key.text("list", .optional(),
            "A text file naming one source per line, relative to the list's folder; blank lines and # comments are skipped, lines with :// are URLs.")
        package static let url = Key.text("url", .optional(), "An http:// or https:// image.")
        package static let key = Key.text("key", .optional("the normalized URL"), "The URL source's key in the state database.")
        package static let headers = Key.headers("headers", "Headers sent for this URL, on top of http.headers.")

        package static let s3 = Key.text("s3", .optional(),
            "A bucket and key prefix in an S3-compatible store, s3://BUCKET/PREFIX: each object below it whose key matches include "
                + "and no exclude pattern is a source (credentials from the environment, never the job file).")
        package static let endpoint = Key.text("endpoint", .optional("AWS's endpoint for the region"),
            "The store's URL with its scheme: https://s3.eu-west-1.amazonaws.com, http://127.0.0.1:8333, https://ACCOUNT.r2.cloudflarestorage.com.")
        package static let region = Key.text("region", .defaults("us-east-1"), "The region requests are signed for (R2: auto).")
        package static let addressing = Key.choice("addressing", .optional("virtual without an endpoint, path with one"),
            "path: http://host/BUCKET/KEY (MinIO, SeaweedFS, Ceph); virtual: https://BUCKET.host/KEY (AWS's own).")
            as Key<S3Endpoint.Addressing>

        package static let shape = ObjectShape([path, recursive, include, exclude, glob, list, url, key, headers, s3, endpoint, region,
                                                addressing], rules: [
            .exactlyOne(path, glob, list, url, s3), .onlyWith(path, recursive), .onlyWith([path.name, s3.name], [include.name, exclude.name]),
            .onlyWith(url, key, headers), .onlyWith(s3, endpoint, region, addressing),
        ])
    }

    private static func readSources(_ root: ObjectReader, baseDirectory: String, retry: RetryPolicy) throws -> [SourceSpec] {
        try root.array(Keys.sources).map { element in
            let source = try ObjectReader(element.value, path: element.path, shape: Source.shape)
            let spec: SourceSpec
            // Only the key present is read: `finish()` lists what the source uses.
            if source.has(Source.path) {
                spec = .path(try path(source, Source.path, baseDirectory), recursive: try source.read(Source.recursive),
                             include: try source.read(Source.include), exclude: try source.read(Source.exclude))
            } else if source.has(Source.glob) {
                spec = .glob(try path(source, Source.glob, baseDirectory))
            } else if source.has(Source.list) {
                spec = .list(try path(source, Source.list, baseDirectory, mayBeURL: true))
            } else if source.has(Source.s3) {
                let location = try source.read(Source.s3)
                guard let place = ObjectURL(location) else {
                    throw source.error(Source.s3, "must be s3://BUCKET/PREFIX (the prefix may be empty), not \(Quoted.value(location))")
                }
                spec = .bucket(try store(source), bucket: place.bucket, prefix: place.key, include: try source.read(Source.include),
                               exclude: try source.read(Source.exclude), retry: retry)
            } else {
                // The exactlyOne rule leaves a URL.
                let url = try source.read(Source.url)
                guard RemoteURL(url) != nil else { throw source.error(Source.url, "must be an absolute http:// or https:// URL") }
                spec = .url(url, key: try source.optional(Source.key), headers: try source.read(Source.headers))
            }
            try source.finish()
            return spec
        }
    }

    /// The store a source's or an output's `endpoint`, `region` and `addressing` name.
    private static func store(_ reader: ObjectReader) throws -> S3Endpoint {
        let region = try reader.read(Source.region)
        guard !region.isEmpty else { throw reader.error(Source.region, "must not be empty") }
        let addressing = try reader.optional(Source.addressing)
        let url = try reader.optional(Source.endpoint)
        guard let store = url.map({ S3Endpoint(url: $0, region: region, addressing: addressing ?? .path) })
                ?? S3Endpoint.aws(region: region, addressing: addressing ?? .virtualHosted) else {
            if let url {
                throw reader.error(Source.endpoint, "must be the store's URL with its scheme, http:// or https:// and a host (and port), "
                                   + "such as https://s3.eu-west-1.amazonaws.com, not \(Quoted.value(url))")
            }
            throw reader.error(Source.region, "makes no AWS host name: \(Quoted.value(region))")
        }
        return store
    }

    /// Where an output is published: a bucket for an `s3://` path (its store, `cacheControl` and
    /// `partSize`), else a folder, which may give none of those keys.
    private static func destination(_ output: ObjectReader, written: String, retry: RetryPolicy) throws -> any Destination {
        guard let object = ObjectURL(written) else {
            let storeKeys: [any KeyDeclaration] = [Source.endpoint, Source.region, Source.addressing, Output.cacheControl, Output.partSize]
            if let given = storeKeys.first(where: { output.has($0) }) {
                throw output.error(given, "is only for an output whose path is s3://BUCKET/...")
            }
            return FolderDestination.shared
        }
        let hashed = written.contains("{hash}")
        return BucketDestination(endpoint: try store(output), bucket: object.bucket,
                                 cacheControl: try output.optional(Output.cacheControl) ?? (hashed ? BucketDestination.immutable : BucketDestination.revalidated),
                                 partSize: try output.read(Output.partSize), retry: retry)
    }

    /// Patterns a folder source picks up when it names none (matched case-insensitively).
    package static let defaultImagePatterns = ["*.jpg", "*.jpeg", "*.png", "*.webp", "*.tif", "*.tiff", "*.gif", "*.heic", "*.heif", "*.avif"]

    /// The path `key` names, resolved. The kernel ends a path at a NUL: "photos\u0000x" would read
    /// photos, and a recursive walk of "\u0000" found the same folder under every name it listed,
    /// until the stack ran out.
    private static func path(_ source: ObjectReader, _ key: Key<String>, _ baseDirectory: String, mayBeURL: Bool = false) throws -> String {
        let path = try source.read(key)
        if !mayBeURL && path.contains("://") { throw source.error(key, "is a URL; use a \"url\" source") }
        if path.utf8.contains(0) { throw source.error(key, "must not contain a NUL character") }
        return Paths.resolve(path, against: baseDirectory)
    }

    package enum Output {
        package static let name = Key.text("name", .required,
            "The output's name: letters, digits, -, _ and .; unique in the job. A block of widths and formats names its outputs NAME-WIDTH-TYPE "
                + "(a part for each of widths and formats it gives).")
        package static let path = Key.text("path", .required,
            "Output path template, relative to the job file: {stem}, {ext}, {dir}, {name}, {key}, {width} (a block's width), {format} "
                + "(the format's usual extension: jpg, png, webp, avif, jxl, tif, gif); must stay inside the folder its literal prefix names, "
                + "and its extension must not name another format than format.type (.webp with jpeg; auto is not checked).")
        package static let chain = ListKey("chain", of: .tagged(operationShape), "Processing steps, in order ([] only re-encodes).")
        package static let format = ObjectKey("format", .tagged(encoderShape), "The encoding; give format or formats.")
        package static let widths = Key<[Int]>("widths", .optional(),
            "Make this output once per width (distinct positive integers): each is a thumbnail fitting inside that width, never enlarging, "
                + "before the chain; the path needs {width} (or {name}) with more than one.",
            schema: ["type": "array", "minItems": 1, "uniqueItems": true, "items": .object(Bound.pixels(.side).schema(integer: true))],
            written: { .array($0.map { .number(Double($0)) }) }) { value, location in
            guard case .array(let elements) = value else { throw JobFileError(location, "must be an array of widths, not \(value.kindName)") }
            guard !elements.isEmpty else { throw JobFileError(location, "must list at least one width") }
            let side = Key.integer("width", .pixels(.side), .required, "")
            return try decodedOnce(elements, at: location, side.decode, name: { String($0) }) {
                "\($0) is given twice (also widths[\($1)]): each width once"
            }
        }
        package static let formats = Key<[any OutputEncoder]>("formats", .optional(),
            "Make this output once per format, instead of format: each element is a format object as format takes, or a type "
                + "(\"avif\") meaning that type with its defaults; each type once, in the order a <picture>'s sources should have. "
                + "The path needs {format} (or {name}) with more than one.",
            schema: ["type": "array", "minItems": 1, "items": [
                "anyOf": [["type": "string", "enum": .array(encoderCatalogue.map { .string($0.type) }), "description": "A type with its defaults."],
                          encoderShape.schema(description: "A format, as format takes.")],
            ]],
            written: { .array($0.map { .string(type(of: $0).type) }) }) { value, location in
            guard case .array(let elements) = value else { throw JobFileError(location, "must be an array of formats, not \(value.kindName)") }
            guard !elements.isEmpty else { throw JobFileError(location, "must list at least one format") }
            return try decodedOnce(elements, at: location, readFormat, name: { type(of: $0).type }) {
                "type \"\($0)\" is given twice (also formats[\($1)]): each type once, as it names the outputs"
            }
        }
        package static let quality = Key<QualityTarget>("quality", .optional(),
            "A perceptual quality target for every format of the output (a block's widths and formats too): {\"ssimulacra2\": 75}; "
                + "each format's own quality is then not given.",
            schema: QualityTarget.shape.schema(description: ""), written: { _ in .null }) { value, location in
            guard case .object = value else {
                throw JobFileError(location, "must be a target such as {\"ssimulacra2\": 75} (a fixed number goes in format.quality), not \(value.kindName)")
            }
            return try QualityTarget(reading: ObjectReader(value, path: location, shape: QualityTarget.shape))
        }
        package static let autorotate = Key.flag("autorotate", default: true, "Apply the EXIF orientation while decoding.")
        package static let keepMetadata = Key.flag("keepMetadata", default: false,
                                           "Keep all of the source's EXIF, XMP, IPTC and ICC profile (the orientation tag is reset once applied).")
        package static let keepIcc = Key.flag("keepIcc", default: false,
            "Keep the ICC profile only (sRGB's after conversion; the source's with colorspace keep); the same as metadata.keep [\"icc\"].")
        package static let metadata = ObjectKey("metadata", .fixed(ObjectShape([MetadataKeys.keep])),
            "The metadata to keep, by field name (none by default); instead of keepMetadata and keepIcc.")
        package static let colorspace = Key.choice("colorspace", .defaults(ColourSpacePolicy.srgb),
            "srgb converts to sRGB; keep leaves RGB and grey pixels in the source's colour space (use with keepIcc). CMYK is converted either way.")
        package static let frames = Key.integer("frames", .positive, .optional("limits.frames"), "This output's frame limit for animations.")

        package static let cacheControl = Key.text("cacheControl", .optional("\(BucketDestination.immutable) with {hash} in the path, else \(BucketDestination.revalidated)"),
            "The Cache-Control an s3:// output's objects are written with.")
        package static let partSize = Key.integer("partSize", .range(5_242_880, 5_368_709_120), .defaults(16_777_216),
            "An s3:// output larger than this many bytes is uploaded in parts of this size (S3's multipart upload; 5 MiB at least).")

        package static let shape = ObjectShape([name, path, chain, format, formats, widths, quality, autorotate, keepMetadata, keepIcc, metadata, colorspace, frames,
                                                Source.endpoint, Source.region, Source.addressing, cacheControl, partSize],
                                               rules: [.exactlyOne(format, formats)])

        /// One element of `formats`: a format object, or a type string for that type with its defaults.
        private static func readFormat(_ element: JSONValue, _ place: String) throws -> any OutputEncoder {
            switch element {
            case .string(let written):
                guard encoderCatalogue.contains(where: { $0.type == written }) else {
                    throw JobFileError(place, Suggestion.unknown("format", written, known: encoderCatalogue.map { $0.type }))
                }
                return try readEncoder(try ObjectReader(JSONValue.object(["type": JSONValue.string(written)]), path: place))
            case .object: return try readEncoder(try ObjectReader(element, path: place))
            default: throw JobFileError(place, "must be a format object or a type, not \(element.kindName)")
            }
        }
    }

    package enum MetadataKeys {
        package static let keep = Key<[MetadataField]>.choices("keep", noun: "field", .required,
            "Fields to keep: " + MetadataField.allCases.map(\.rawValue).joined(separator: ", ")
                + " (docs/JOB-FILE.md, Metadata, maps each to its EXIF, XMP and IPTC fields); everything else is dropped.")
    }

    /// An output's metadata policy: `metadata.keep`, or the older flags (which it replaces, so not both).
    private static func readMetadata(_ output: ObjectReader) throws -> MetadataPolicy {
        let keepMetadata = try output.read(Output.keepMetadata)
        let keepIcc = try output.read(Output.keepIcc)
        guard output.has(Output.metadata) else { return keepMetadata ? .all : keepIcc ? .icc : .strip }
        if output.has(Output.keepMetadata) || output.has(Output.keepIcc) {
            throw output.error(Output.metadata, "give metadata or keepMetadata/keepIcc, not both")
        }
        let section = try output.object(Output.metadata)
        let fields = Set(try section.read(MetadataKeys.keep))
        try section.finish()
        return .keep(fields)
    }

    private static func readOutputs(_ root: ObjectReader, baseDirectory: String, retry: RetryPolicy) throws -> [OutputSpec] {
        var seen: Set<String> = []
        return try root.array(Keys.outputs).flatMap { element in
            let output = try ObjectReader(element.value, path: element.path, shape: Output.shape)
            let name = try output.read(Output.name)
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
                throw output.error(Output.name, "may contain only letters, digits, '-', '_' and '.'")
            }
            guard seen.insert(name).inserted else { throw output.error(Output.name, "\(Quoted.value(name)) is used by another output") }
            let written = try output.read(Output.path)
            let members = try blockMembers(output, name: name, written: written, baseDirectory: baseDirectory)
            let chain = try OperationChain.read(try output.array(Output.chain), baseDirectory: baseDirectory)
            let autorotate = try output.read(Output.autorotate)
            let metadata = try readMetadata(output)
            let colourSpace = try output.read(Output.colorspace)
            let frames = try output.optional(Output.frames)
            let destination = try destination(output, written: written, retry: retry)
            try output.finish()
            return try members.map { member in
                // The block's outputs are named after it; a name taken elsewhere is the block's error.
                guard member.set == nil || seen.insert(member.name).inserted else {
                    throw output.error(Output.name, "\(Quoted.value(member.name)), which this block makes, is used by another output")
                }
                let steps: [any ImageOperation] = member.set?.width.map { [Thumbnail(inside: $0)] } ?? []
                return OutputSpec(name: member.name, location: element.path, set: member.set, template: member.template,
                                  chain: OperationChain(steps: steps + chain.steps), encoder: member.encoder, autorotate: autorotate,
                                  metadata: metadata, colourSpace: colourSpace, frames: frames, destination: destination)
            }
        }
    }

    /// One output of a block as written: its name and path template, `{width}` and `{format}` written out.
    private typealias BlockMember = (name: String, set: OutputSetMember?, template: PathTemplate, encoder: any OutputEncoder)

    /// An output as written, with its `widths` and `format` or `formats`: one member for a plain output,
    /// one per width and format for a block (docs/JOB-FILE.md, Width and format blocks).
    private static func blockMembers(_ output: ObjectReader, name: String, written: String, baseDirectory: String) throws -> [BlockMember] {
        let widths = try output.optional(Output.widths)
        let formats = try output.optional(Output.formats)
        var encoders = try formats ?? [readEncoder(try output.object(Output.format))]
        if let target = try output.optional(Output.quality) { encoders = try targeting(encoders, target, output, listed: formats != nil) }
        let isBlock = widths != nil || formats != nil
        if written.contains("{width}") && widths == nil {
            throw output.error(Output.path, "{width} is the width of a block: give widths, or leave {width} out")
        }
        if written.contains("{format}"), let auto = encoders.first(where: { type(of: $0).extensions.isEmpty }) {
            throw output.error(Output.path, "{format} is a format's usual extension, which \(type(of: auto).type) has none of: use {ext}")
        }
        // Each output of a block must have a path of its own: its width and format in it, or its name.
        for (count, token, noun) in [(widths?.count ?? 1, "{width}", "widths"), (encoders.count, "{format}", "formats")]
        where count > 1 && !written.contains(token) && !written.contains("{name}") {
            throw output.error(Output.path, "must contain \(token): the block makes \(count) \(noun) (or {name}, which names each output)")
        }
        var members: [BlockMember] = []
        for width in widths.map({ $0.map(Optional.some) }) ?? [nil] {
            for (index, encoder) in encoders.enumerated() {
                let type = type(of: encoder)
                let memberName = name + (width.map { "-\($0)" } ?? "") + (formats == nil ? "" : "-\(type.type)")
                var path = written.replacingOccurrences(of: "{width}", with: width.map(String.init) ?? "")
                path = path.replacingOccurrences(of: "{format}", with: type.extensions.first ?? "")
                let template = try PathTemplate(path, baseDirectory: baseDirectory, location: output.location(Output.path))
                // A name that ends in a token is checked for each item by the planner.
                if !template.extensionVaries, let mismatch = extensionMismatch(Paths.lastComponent(path), for: encoder) {
                    throw output.error(Output.path, (formats == nil ? "" : "with formats[\(index)]: ") + mismatch)
                }
                let set = isBlock ? OutputSetMember(block: name, width: width, narrower: (widths ?? []).filter { $0 < width ?? 0 }.max(),
                                                        format: type.type, formatIndex: index) : nil
                members.append((isBlock ? memberName : name, set, template, encoder))
            }
        }
        return members
    }

    /// Every format of an output under its `quality` target: each must take one (JPEG, WebP, AVIF,
    /// JPEG XL, lossy) and give no quality of its own.
    private static func targeting(_ encoders: [any OutputEncoder], _ target: QualityTarget, _ output: ObjectReader,
                                  listed: Bool) throws -> [any OutputEncoder] {
        try encoders.enumerated().map { index, encoder in
            let place = listed ? output.location(Output.formats) + "[\(index)]" : output.location(Output.format)
            guard let searchable = encoder as? any QualitySearchable else {
                throw output.error(Output.quality, "a target needs a format with a quality (jpeg, webp, avif, jxl); \(place) is \(type(of: encoder).type)")
            }
            guard !searchable.qualityGiven else {
                throw JobFileError(place + ".quality", "is given here and as a target in \(output.location(Output.quality)): give one")
            }
            do { return try searchable.targeting(target) } catch let refusal as TargetRefusal {
                throw output.error(Output.quality, "\(place): \(refusal.reason)")
            }
        }
    }

    package enum Concurrency {
        package static let process = Key.integer("process", .range(1, 256), .optional("the number of cores"),
                                         "Image worker processes (--jobs overrides).")
        package static let threadsPerImage = Key.integer("threadsPerImage", .range(1, 64), .defaults(1), "libvips threads inside each worker.")
        package static let recycleAfter = Key.integer("recycleAfter", .positive, .defaults(1000),
                                              "A worker is replaced after this many sources, so memory stays flat.")
    }

    package enum Limit {
        /// sharp's `limitInputPixels` default: 16383 x 16383.
        package static let maxPixels = Key.integer("maxPixels", .positive, .defaults(268_402_689),
            "Larger images (width x height from the header) fail as too-large before any pixel is decoded.")
        package static let failOn = Key.choice("failOn", .defaults(FailOn.error),
            "Decoder strictness (libvips fail_on): none, truncated, error (truncated and corrupt data fail) or warning.")
        package static let blockUntrusted = Key.flag("blockUntrusted", default: true,
                                             "Keep the loaders libvips marks untrusted (PPM, CSV, raw, Analyze, vips, ...) blocked.")
        package static let frames = Key.integer("frames", .positive, .defaults(300),
                                        "Most frames an animated output may have; an animation with more fails as too-large.")
        /// 2 GiB: every 8- or 16-bit image within the default maxPixels, alpha included.
        package static let maxMemory = Key.integer("maxMemory", .positive, .defaults(2_147_483_648),
            "Bytes: an image whose full decode would need more (width x height x bands x bytes per band, from the header) "
                + "fails as too-large before any pixel is decoded; a worker's address space is capped at twice this plus 1 GiB "
                + "(and 128 MiB per libvips thread), so a decoder that runs away fails its own source.")
        package static let itemTimeout = Key.integer("itemTimeout", .positive, .defaults(600),
            "Seconds a worker may spend on one source (every output of it); one that takes longer or stops answering "
                + "is killed and replaced, and the source fails as crashed (tried again next run).")
    }
}
