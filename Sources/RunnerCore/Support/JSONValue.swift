import Foundation

/// A parsed JSON document that keeps the difference between booleans, numbers and strings,
/// so the job reader can report wrong types precisely.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// What a user calls this kind of value in an error message.
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Canonical spelling of a number inside identifiers: integers without a fraction,
/// everything else in Swift's shortest round-trip form, so `1`, `1.0` and `1e0` agree.
func canonicalNumber(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return "\(value)"
}
