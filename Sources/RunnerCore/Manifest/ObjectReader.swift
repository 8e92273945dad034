/// Reads one JSON object of a job file, checking types and ranges and remembering which keys
/// it read, so `finish()` can reject keys nobody asked for. Every error names the exact location.
public final class ObjectReader {
    public let path: String
    private let fields: [String: JSONValue]
    private var consumed: Set<String> = []

    public init(_ value: JSONValue, path: String) throws {
        guard case .object(let fields) = value else {
            throw JobFileError(path, "must be an object, not \(value.kindName)")
        }
        self.path = path
        self.fields = fields
    }

    /// Every key the object has, for objects whose keys are data (header names).
    public var keys: [String] { fields.keys.sorted() }

    public func location(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    public func has(_ key: String) -> Bool { fields[key] != nil && fields[key] != .null }

    /// The raw value, marked as read.
    public func value(_ key: String) -> JSONValue? {
        consumed.insert(key)
        guard let value = fields[key], value != .null else { return nil }
        return value
    }

    public func error(_ key: String, _ message: String) -> JobFileError {
        JobFileError(location(key), message)
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

    /// Rejects keys that were never read: a typo must not silently fall back to a default.
    public func finish() throws {
        if let unknown = fields.keys.filter({ !consumed.contains($0) }).sorted().first {
            let known = consumed.sorted().joined(separator: ", ")
            throw error(unknown, "unknown key" + (known.isEmpty ? "" : " (expected one of: \(known))"))
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
