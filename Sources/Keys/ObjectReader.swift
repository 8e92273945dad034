import Support
/// Reads one JSON object of a job file through its declared keys, every error naming the exact location
/// in the job file's spelling. Keys are declared before any rule reads a value, so a misspelled key is
/// reported as such (`"widht": 100` is not "width or height is required"); `finish()` then rejects
/// known keys that nothing read because other values make them inapplicable.
public final class ObjectReader {
    public let path: String
    private var fields: [String: JSONValue]
    /// Nil until declared.
    private var declared: Set<String>?
    /// Declared key -> the spelling the job file used (`color` for `colour`), for locations.
    private var spellings: [String: String] = [:]
    private var consumed: Set<String> = []

    /// An object that declares its keys once it knows what it is (`read(choosing:among:_:)`).
    package init(_ value: JSONValue, path: String) throws {
        guard case .object(let fields) = value else { throw JobFileError(path, "must be an object, not \(value.kindName)") }
        (self.path, self.fields) = (path, fields)
    }

    package convenience init(_ value: JSONValue, path: String, shape: ObjectShape) throws {
        try self.init(value, path: path)
        try declare(shape.keys.map(\.name))
        try enforce(shape.rules)
    }

    /// Checks every key of the object against `keys` before any value is read, and files
    /// alternative spellings under the declared key (see `spellings(of:)`), so identifiers never
    /// depend on the spelling.
    private func declare(_ keys: [String]) throws {
        var filed: [String: JSONValue] = [:]
        for written in fields.keys.sorted() {
            guard let key = keys.first(where: { Self.spellings(of: $0).contains(written) }) else {
                throw JobFileError(path, Suggestion.unknown("key", written, known: Set(keys)), member: written)
            }
            if let earlier = spellings[key] {
                throw JobFileError(member(written), "is the same key as \"\(earlier)\"; give it once")
            }
            spellings[key] = written
            filed[key] = fields[written]
        }
        fields = filed
        declared = Set(keys)
    }

    private func enforce(_ rules: [KeyRule]) throws {
        for rule in rules {
            if let problem = rule.violation(given: has(named:), path: path, location: location(named:)) { throw problem }
        }
    }

    /// A key and the other spellings that mean it, `color` for `colour` and back: most of the
    /// ecosystem spells it `color`, runner's documentation `colour`, and both are accepted.
    package static func spellings(of key: String) -> [String] {
        let american = key.replacingOccurrences(of: "olour", with: "olor")
        let british = american.replacingOccurrences(of: "olor", with: "olour")
        return [key] + Set([american, british]).subtracting([key]).sorted()
    }

    public func location(_ key: any KeyDeclaration) -> String { location(named: key.name) }

    private func location(named key: String) -> String { member(spellings[key] ?? key) }

    private func member(_ written: String) -> String { path.isEmpty ? written : "\(path).\(written)" }

    public func has(_ key: any KeyDeclaration) -> Bool { has(named: key.name) }

    private func has(named key: String) -> Bool {
        assertDeclared(key)
        return fields[key] != nil && fields[key] != .null
    }

    /// The raw value, marked as read.
    private func value(_ key: String) -> JSONValue? {
        assertDeclared(key)
        consumed.insert(key)
        return fields[key] == .null ? nil : fields[key]
    }

    /// Reads an object whose tag (`op`, `type`) picks what it is: declares its keys, has `make` read the
    /// pick's, then `finish()`es. While the tag is missing or unknown every variant's keys count as known,
    /// so a misspelled key is still reported first, and a misspelled tag key is not taken for data.
    package func read<Choice, Made>(choosing tagged: TaggedShape, among choices: [String: Choice],
                                    _ make: (Choice) throws -> Made) throws -> Made {
        let written: String? = if case .string(let text)? = fields[tagged.tag] { text } else { nil }
        let variant = tagged.variants.first { variant in written.map(variant.names.contains) ?? false }
        let known = (variant.map { [$0] } ?? tagged.variants).flatMap { $0.shape.keys.map(\.name) }
        try declare([tagged.tag] + Set(known).sorted())
        let name = try read(Key<String>.text(tagged.tag, .required, tagged.summary))
        guard let variant, let choice = choices[name] else {
            throw error(named: tagged.tag, Suggestion.unknown(tagged.noun, name, known: tagged.variants.flatMap(\.names)))
        }
        try enforce(variant.shape.rules)
        let made = try make(choice)
        try finish()
        return made
    }

    public func error(_ key: any KeyDeclaration, _ message: String) -> JobFileError { error(named: key.name, message) }

    private func error(named key: String, _ message: String) -> JobFileError { JobFileError(location(named: key), message) }

    /// Reading a key that was not declared is a programming error: the declaration has drifted
    /// from the reads, and a user's spelling of that key would be rejected as unknown.
    private func assertDeclared(_ key: String) {
        assert(declared?.contains(key) ?? true, "\(path): reads undeclared key \(key)")
    }

    // MARK: Values

    /// The key's value, or its default; absent without one is an error ("is required"), also for
    /// a key that other values make required (a crop's width unless it trims).
    package func read<Value>(_ key: Key<Value>) throws -> Value {
        if let value = try optional(key) { return value }
        if let fallback = key.fallback { return fallback }
        throw error(key, key.missing)
    }

    /// The key's value; nil when absent, for the caller to decide what that means.
    package func optional<Value>(_ key: Key<Value>) throws -> Value? {
        try value(key.name).map { try key.decode($0, location(key)) }
    }

    /// A nested object, declared with its shape (a tagged one is left for `read(choosing:among:_:)`). An
    /// absent optional object reads as empty, so its keys' defaults apply.
    package func object(_ key: ObjectKey) throws -> ObjectReader {
        let given = value(key.name)
        if given == nil && key.isRequired { throw error(key, "is required") }
        guard case .fixed(let shape) = key.content else { return try ObjectReader(given ?? .object([:]), path: location(key)) }
        return try ObjectReader(given ?? .object([:]), path: location(key), shape: shape)
    }

    /// Elements of an array with their locations (`outputs[1]`).
    package func array(_ key: ListKey) throws -> [(value: JSONValue, path: String)] {
        guard let value = value(key.name) else { throw error(key, "is required") }
        guard case .array(let elements) = value else { throw error(key, "must be an array, not \(value.kindName)") }
        if let noun = key.noun, elements.isEmpty { throw error(key, "must list at least one \(noun)") }
        return elements.enumerated().map { ($0.element, "\(location(key))[\($0.offset)]") }
    }

    /// Rejects known keys that were never read because the object's other values rule them out
    /// (`recursive` on a glob source): a key must never be silently ignored.
    public func finish() throws {
        if let unread = fields.keys.filter({ !consumed.contains($0) }).sorted().first {
            throw error(named: unread, "does not apply here (this object uses: \(consumed.sorted().joined(separator: ", ")))")
        }
    }
}

/// A range check with the message users see.
public enum Bound: Sendable {
    case any
    case positive                    // > 0
    case nonNegative                 // >= 0
    case range(Double, Double)       // inclusive
    case oneOf([Double])
    /// Image sides, offsets and margins in pixels: libvips takes them as 32-bit integers and makes
    /// no side beyond VIPS_MAX_COORD, so a larger one would trap the worker instead of failing the
    /// job file.
    case pixels(PixelBound)

    public enum PixelBound: Sendable {
        /// A side or a radius: 1 to the largest side.
        case side
        /// Added pixels, a left or top edge: 0 to the largest side.
        case margin
        /// A move either way.
        case offset
    }

    /// VIPS_MAX_COORD.
    package static let largestImageSide = 10_000_000.0

    package func violation(_ value: Double, integer: Bool) -> String? {
        switch self {
        case .any: return nil
        case .positive: return value > 0 ? nil : (integer ? "must be a positive integer" : "must be > 0")
        case .nonNegative: return value >= 0 ? nil : "must be >= 0"
        case .range(let low, let high):
            return (low...high).contains(value) ? nil
                : "must be between \(canonicalNumber(low)) and \(canonicalNumber(high))"
        case .oneOf(let allowed):
            return allowed.contains(value) ? nil
                : "must be one of \(allowed.map(canonicalNumber).joined(separator: ", "))"
        case .pixels(let kind):
            let (low, high) = pixelRange(kind)
            if value < low { return kind == .side ? "must be a positive integer" : "must be at least \(canonicalNumber(low))" }
            return value <= high ? nil : "must be at most \(canonicalNumber(high)) (libvips' largest image side)"
        }
    }

    private func pixelRange(_ kind: PixelBound) -> (Double, Double) {
        let largest = Self.largestImageSide
        switch kind {
        case .side: return (1, largest)
        case .margin: return (0, largest)
        case .offset: return (-largest, largest)
        }
    }

    /// The same range for JSON Schema.
    package func schema(integer: Bool) -> [String: JSONValue] {
        var schema: [String: JSONValue] = ["type": integer ? "integer" : "number"]
        switch self {
        case .any: break
        case .positive: if integer { schema["minimum"] = 1 } else { schema["exclusiveMinimum"] = 0 }
        case .nonNegative: schema["minimum"] = 0
        case .range(let low, let high): (schema["minimum"], schema["maximum"]) = (.number(low), .number(high))
        case .oneOf(let allowed): schema["enum"] = .array(allowed.map(JSONValue.number))
        case .pixels(let kind): (schema["minimum"], schema["maximum"]) = (.number(pixelRange(kind).0), .number(pixelRange(kind).1))
        }
        return schema
    }

    package var integerMessage: String {
        switch self {
        case .positive, .pixels(.side): "must be a positive integer"
        case .range(let low, let high): "must be an integer between \(canonicalNumber(low)) and \(canonicalNumber(high))"
        default: "must be an integer"
        }
    }
}
