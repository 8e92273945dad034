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
    /// Indented JSON with sorted keys, so output diffs well (nil `indent`: `compact`); whole numbers without a fraction.
    package func formatted(indent: String? = "") -> String {
        var text = ""
        append(to: &text, indent: indent)
        return text
    }

    /// One line, keys sorted, no spaces: a JSON Lines record, stable byte for byte.
    package var compact: String { formatted(indent: nil) }

    /// Appended into one string (a manifest writes a million of these): indented by `indent`, or on one line.
    private func append(to text: inout String, indent: String?) {
        let inner = indent.map { $0 + "  " }
        func list<Item>(_ items: [Item], _ open: String, _ close: String, _ each: (Item, inout String) -> Void) {
            text += open
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                if let inner { text += "\n" + inner }
                each(item, &text)
            }
            if let indent, !items.isEmpty { text += "\n" + indent }
            text += close
        }
        switch self {
        case .null: text += "null"
        case .bool(let flag): text += String(flag)
        case .number(let number): text += canonicalNumber(number)
        case .string(let string): Self.appendQuoted(string, to: &text)
        case .array(let elements): list(elements, "[", "]") { $0.append(to: &$1, indent: inner) }
        case .object(let fields):
            list(fields.sorted { $0.key < $1.key }, "{", "}") { field, text in
                Self.appendQuoted(field.key, to: &text)
                text += inner == nil ? ":" : ": "
                field.value.append(to: &text, indent: inner)
            }
        }
    }

    /// Text needing no escape (most keys, paths and hashes) is appended whole.
    private static func appendQuoted(_ string: String, to text: inout String) {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        text += "\""
        if string.utf8.allSatisfy({ $0 >= 0x20 && $0 != quote && $0 != backslash }) {
            text += string
        } else {
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20: text += String(format: "\\u%04x", scalar.value)
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}

/// Canonical spelling of a number inside identifiers: integers without a fraction,
/// everything else in Swift's shortest round-trip form, so `1`, `1.0` and `1e0` agree.
package func canonicalNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
}
