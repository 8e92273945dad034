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
    package var kindName: String {
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

/// Literals, so declarations can spell JSON Schema fragments as they read (`["type": "string"]`).
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
}

extension JSONValue {
    /// Indented JSON with sorted keys, so output diffs well; whole numbers without a fraction.
    package func formatted(indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case .null: return "null"
        case .bool(let flag): return String(flag)
        case .number(let number): return canonicalNumber(number)
        case .string(let text): return Self.quoted(text)
        case .array(let elements):
            guard !elements.isEmpty else { return "[]" }
            return "[\n" + elements.map { inner + $0.formatted(indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let fields):
            guard !fields.isEmpty else { return "{}" }
            let members = fields.sorted { $0.key < $1.key }.map { "\(inner)\(Self.quoted($0.key)): \($0.value.formatted(indent: inner))" }
            return "{\n" + members.joined(separator: ",\n") + "\n\(indent)}"
        }
    }

    /// One line, keys sorted, no spaces: a JSON Lines record, stable byte for byte.
    package var compact: String {
        var text = ""
        appendCompact(to: &text)
        return text
    }

    /// Appended into one string: a manifest writes a million of these.
    private func appendCompact(to text: inout String) {
        switch self {
        case .null, .bool, .number: text += formatted()
        case .string(let string): Self.appendQuoted(string, to: &text)
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                element.appendCompact(to: &text)
            }
            text += "]"
        case .object(let fields):
            text += "{"
            for (index, field) in fields.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { text += "," }
                Self.appendQuoted(field.key, to: &text)
                text += ":"
                field.value.appendCompact(to: &text)
            }
            text += "}"
        }
    }

    /// Text needing no escape (most keys, paths and hashes) is appended whole.
    private static func appendQuoted(_ string: String, to text: inout String) {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        if string.utf8.allSatisfy({ $0 >= 0x20 && $0 != quote && $0 != backslash }) {
            text += "\""
            text += string
            text += "\""
        } else {
            text += quoted(string)
        }
    }

    private static func quoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20: quoted += String(format: "\\u%04x", scalar.value)
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}

/// Canonical spelling of a number inside identifiers: integers without a fraction,
/// everything else in Swift's shortest round-trip form, so `1`, `1.0` and `1e0` agree.
package func canonicalNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
}
