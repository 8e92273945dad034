/// Reads one JSON object of a job file, checking types and ranges. Every error names the exact
/// location, in the spelling the job file used.
///
/// An object with fixed keys declares them all before any rule reads a value (`keys:` or
/// `declare`), so a misspelled key is reported as such, with the nearest known key, rather than
/// through a rule it defeats (`"widht": 100` is not "width or height is required"). `finish()`
/// then rejects the known keys that nothing read because other values make them inapplicable.
/// Objects whose keys are data (header names) declare none.
public final class ObjectReader {
    public let path: String
    private var fields: [String: JSONValue]
    /// Nil until declared, and for objects whose keys are data.
    private var declared: Set<String>?
    /// Declared key -> the spelling the job file used (`color` for `colour`), for locations.
    private var spellings: [String: String] = [:]
    private var consumed: Set<String> = []

    public init(_ value: JSONValue, path: String) throws {
        guard case .object(let fields) = value else {
            throw JobFileError(path, "must be an object, not \(value.kindName)")
        }
        self.path = path
        self.fields = fields
    }

    public convenience init(_ value: JSONValue, path: String, keys: [String]) throws {
        try self.init(value, path: path)
        try declare(keys)
    }

    /// Checks every key of the object against `keys` before any value is read, and files
    /// alternative spellings under the declared key (see `sameKey`), so identifiers never depend
    /// on the spelling.
    public func declare(_ keys: [String]) throws {
        var filed: [String: JSONValue] = [:]
        for written in fields.keys.sorted() {
            guard let key = keys.first(where: { Self.sameKey($0, written) }) else {
                throw JobFileError(path, Suggestion.unknown("key", written, known: Set(keys)))
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

    /// Keys differ only in spelling when they read the same with `color` for `colour`: most of the
    /// ecosystem spells it `color`, runner's documentation `colour`, and both are accepted.
    static func sameKey(_ declared: String, _ written: String) -> Bool {
        declared == written
            || declared.replacingOccurrences(of: "olour", with: "olor") == written.replacingOccurrences(of: "olour", with: "olor")
    }

    /// Every key the object has, for objects whose keys are data (header names).
    public var keys: [String] { fields.keys.sorted() }

    public func location(_ key: String) -> String { member(spellings[key] ?? key) }

    private func member(_ written: String) -> String { path.isEmpty ? written : "\(path).\(written)" }

    public func has(_ key: String) -> Bool {
        assertDeclared(key)
        return fields[key] != nil && fields[key] != .null
    }

    /// The raw value, marked as read.
    public func value(_ key: String) -> JSONValue? {
        assertDeclared(key)
        consumed.insert(key)
        guard let value = fields[key], value != .null else { return nil }
        return value
    }

    /// A string value without reading it: the key that decides which other keys an object has.
    public func peekString(_ key: String) -> String? {
        if case .string(let text)? = fields[key] { return text }
        return nil
    }

    /// Declares the keys of an object whose `key` (`op`, `type`) picks what it is, and returns the
    /// pick. While the pick is missing or unknown every choice's keys count as known, so a
    /// misspelled key is still reported first, and a misspelled `key` itself is not taken for data.
    public func declareChoice<Choice>(_ key: String, noun: String, among choices: [String: Choice],
                                      keys: (Choice) -> [String]) throws -> Choice {
        let picked = peekString(key).flatMap { choices[$0] }
        let known = picked.map(keys) ?? choices.values.flatMap(keys)
        try declare([key] + Set(known).sorted())
        let name = try requiredString(key)
        guard let picked else { throw error(key, Suggestion.unknown(noun, name, known: choices.keys)) }
        return picked
    }

    public func error(_ key: String, _ message: String) -> JobFileError {
        JobFileError(location(key), message)
    }

    /// Reading a key that was not declared is a programming error: the declaration has drifted
    /// from the reads, and a user's spelling of that key would be rejected as unknown.
    private func assertDeclared(_ key: String) {
        assert(declared?.contains(key) ?? true, "\(path): reads undeclared key \(key)")
    }

    // MARK: Scalars

    public func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw error(key, "must be a string, not \(value.kindName)") }
        return text
    }

    public func requiredString(_ key: String) throws -> String {
        guard let text = try string(key) else { throw error(key, "is required") }
        guard !text.isEmpty else { throw error(key, "must not be empty") }
        return text
    }

    public func bool(_ key: String, default fallback: Bool) throws -> Bool {
        guard let value = value(key) else { return fallback }
        guard case .bool(let flag) = value else { throw error(key, "must be true or false, not \(value.kindName)") }
        return flag
    }

    public func number(_ key: String) throws -> Double? {
        guard let value = value(key) else { return nil }
        guard case .number(let number) = value, number.isFinite else {
            throw error(key, "must be a number, not \(value.kindName)")
        }
        return number
    }

    public func double(_ key: String, default fallback: Double? = nil, _ bound: Bound = .any) throws -> Double {
        guard let number = try number(key) else {
            if let fallback { return fallback }
            throw error(key, "is required")
        }
        if let problem = bound.violation(number, integer: false) { throw error(key, problem) }
        return number
    }

    public func optionalDouble(_ key: String, _ bound: Bound = .any) throws -> Double? {
        has(key) ? try double(key, bound) : { consumed.insert(key); return nil }()
    }

    public func int(_ key: String, default fallback: Int? = nil, _ bound: Bound = .any) throws -> Int {
        guard let number = try number(key) else {
            if let fallback { return fallback }
            throw error(key, "is required")
        }
        guard number == number.rounded(), abs(number) < 9e15 else {
            throw error(key, bound.integerMessage)
        }
        if let problem = bound.violation(number, integer: true) { throw error(key, problem) }
        return Int(number)
    }

    public func optionalInt(_ key: String, _ bound: Bound = .any) throws -> Int? {
        has(key) ? try int(key, bound) : { consumed.insert(key); return nil }()
    }

    public func choice<Choice: RawRepresentable & CaseIterable>(
        _ key: String, default fallback: Choice
    ) throws -> Choice where Choice.RawValue == String {
        guard let text = try string(key) else { return fallback }
        guard let picked = Choice(rawValue: text) else {
            let names = Choice.allCases.map(\.rawValue).joined(separator: ", ")
            throw error(key, "must be one of \(names), not \"\(text)\"")
        }
        return picked
    }

    public func stringArray(_ key: String, default fallback: [String]) throws -> [String] {
        guard let value = value(key) else { return fallback }
        guard case .array(let elements) = value else { throw error(key, "must be an array of strings") }
        return try elements.enumerated().map { index, element in
            guard case .string(let text) = element else {
                throw JobFileError("\(location(key))[\(index)]", "must be a string, not \(element.kindName)")
            }
            return text
        }
    }

    // MARK: Nesting

    /// A nested object with fixed keys.
    public func object(_ key: String, keys: [String]) throws -> ObjectReader? {
        guard let value = value(key) else { return nil }
        return try ObjectReader(value, path: location(key), keys: keys)
    }

    /// A nested object that declares its keys once it knows what it is (`declareChoice`),
    /// or whose keys are data (header names).
    public func object(_ key: String) throws -> ObjectReader? {
        guard let value = value(key) else { return nil }
        return try ObjectReader(value, path: location(key))
    }

    /// Elements of an array with their locations (`outputs[1]`).
    public func array(_ key: String) throws -> [(value: JSONValue, path: String)]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else { throw error(key, "must be an array, not \(value.kindName)") }
        return elements.enumerated().map { ($0.element, "\(location(key))[\($0.offset)]") }
    }

    /// Rejects known keys that were never read because the object's other values rule them out
    /// (`recursive` on a glob source): a key must never be silently ignored.
    public func finish() throws {
        if let unread = fields.keys.filter({ !consumed.contains($0) }).sorted().first {
            throw error(unread, "does not apply here (this object uses: \(consumed.sorted().joined(separator: ", ")))")
        }
    }
}

/// A range check with the message users see.
public enum Bound: Sendable {
    case any
    case positive                    // > 0
    case nonNegative                 // >= 0
    case atLeast(Double)
    case range(Double, Double)       // inclusive
    case oneOf([Double])

    func violation(_ value: Double, integer: Bool) -> String? {
        switch self {
        case .any: return nil
        case .positive:
            return value > 0 ? nil : (integer ? "must be a positive integer" : "must be > 0")
        case .nonNegative:
            return value >= 0 ? nil : "must be >= 0"
        case .atLeast(let low):
            return value >= low ? nil : "must be >= \(canonicalNumber(low))"
        case .range(let low, let high):
            return (low...high).contains(value) ? nil
                : "must be between \(canonicalNumber(low)) and \(canonicalNumber(high))"
        case .oneOf(let allowed):
            return allowed.contains(value) ? nil
                : "must be one of \(allowed.map(canonicalNumber).joined(separator: ", "))"
        }
    }

    var integerMessage: String {
        switch self {
        case .positive: "must be a positive integer"
        case .range(let low, let high): "must be an integer between \(canonicalNumber(low)) and \(canonicalNumber(high))"
        default: "must be an integer"
        }
    }
}
