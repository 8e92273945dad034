import Support
/// One key of a job-file object, declared once: `ObjectReader` reads values through it and `JobSchema`
/// renders it as JSON Schema, so what the reader accepts and what an editor is told cannot drift apart.
public protocol KeyDeclaration: Sendable {
    var name: String { get }
    /// Absent is an error ("is required").
    var isRequired: Bool { get }
    /// The value's JSON Schema, with its description and default.
    var schema: JSONValue { get }
}

/// What an absent key means.
public enum Presence<Value: Sendable>: Sendable {
    case required
    /// This value is used.
    case defaults(Value)
    /// The reader works it out from elsewhere, as `note` says ("the number of cores"), or the key
    /// only matters when given.
    case optional(String? = nil)
}

/// A key holding a value the reader decodes through this declaration: its type check, range,
/// choices and default live here, and its schema is rendered from the same values.
public struct Key<Value: Sendable>: KeyDeclaration {
    public let name: String
    package let presence: Presence<Value>
    package let summary: String
    /// Type, range, choices or pattern, without description and default.
    package let valueSchema: [String: JSONValue]
    /// The message for an absent required key.
    package let missing: String
    /// The default as a job file writes it.
    package let written: @Sendable (Value) -> JSONValue
    /// Checks a written value; errors name `location`.
    package let decode: @Sendable (_ value: JSONValue, _ location: String) throws -> Value

    package init(_ name: String, _ presence: Presence<Value>, _ summary: String, schema: [String: JSONValue],
         missing: String = "is required", written: @escaping @Sendable (Value) -> JSONValue,
         decode: @escaping @Sendable (JSONValue, String) throws -> Value) {
        (self.name, self.presence, self.summary, valueSchema) = (name, presence, summary, schema)
        (self.missing, self.written, self.decode) = (missing, written, decode)
    }

    public var isRequired: Bool { if case .required = presence { true } else { false } }

    /// The value used when the key is absent, if there is one.
    package var fallback: Value? { if case .defaults(let value) = presence { value } else { nil } }

    public var schema: JSONValue {
        var schema = valueSchema
        var description = summary
        switch presence {
        case .defaults(let value): schema["default"] = written(value)
        case .optional(let note?): description += " Default: \(note)."
        case .required, .optional(nil): break
        }
        schema["description"] = .string(description)
        return .object(schema)
    }
}

extension Key where Value == Bool {
    package static func flag(_ name: String, default fallback: Bool, _ summary: String) -> Key {
        Key(name, .defaults(fallback), summary, schema: ["type": "boolean"], written: JSONValue.bool) { value, location in
            guard case .bool(let flag) = value else { throw JobFileError(location, "must be true or false, not \(value.kindName)") }
            return flag
        }
    }
}

extension Key where Value == Int {
    package static func integer(_ name: String, _ bound: Bound, _ presence: Presence<Int>, _ summary: String) -> Key {
        Key(name, presence, summary, schema: bound.schema(integer: true), written: { .number(Double($0)) }) { value, location in
            let number = try decodeNumber(value, location)
            guard number == number.rounded(), abs(number) < 9e15 else { throw JobFileError(location, bound.integerMessage) }
            if let problem = bound.violation(number, integer: true) { throw JobFileError(location, problem) }
            return Int(number)
        }
    }
}

extension Key where Value == Double {
    package static func number(_ name: String, _ bound: Bound, _ presence: Presence<Double>, _ summary: String) -> Key {
        Key(name, presence, summary, schema: bound.schema(integer: false), written: JSONValue.number) { value, location in
            let number = try decodeNumber(value, location)
            if let problem = bound.violation(number, integer: false) { throw JobFileError(location, problem) }
            return number
        }
    }

    /// "7d", "12h", "30m", "90s", "2w" or a plain number of seconds, read as seconds.
    package static func duration(_ name: String, _ presence: Presence<Double>, _ summary: String) -> Key {
        Key(name, presence, summary, schema: ["type": "string", "pattern": .string(Durations.pattern)],
            written: { .string(Durations.describe($0)) }) { value, location in
            guard case .string(let text) = value, let seconds = Durations.seconds(text) else {
                throw JobFileError(location, "must be a duration such as \"7d\", \"12h\", \"30m\" or \"90s\"")
            }
            return seconds
        }
    }
}

private func decodeNumber(_ value: JSONValue, _ location: String) throws -> Double {
    guard case .number(let number) = value, number.isFinite else {
        throw JobFileError(location, "must be a number, not \(value.kindName)")
    }
    return number
}

/// An array's elements decoded in order by `decode` (given each one's location), each `name` at most
/// once: a repeat is an error at its own location, `repeated(name, the earlier one's offset)`.
package func decodedOnce<Value>(_ elements: [JSONValue], at location: String, _ decode: (JSONValue, String) throws -> Value,
                                name: (Value) -> String, repeated: (String, Int) -> String) throws -> [Value] {
    var offsets: [String: Int] = [:]
    return try elements.enumerated().map { offset, element in
        let value = try decode(element, "\(location)[\(offset)]")
        if let earlier = offsets.updateValue(offset, forKey: name(value)) {
            throw JobFileError("\(location)[\(offset)]", repeated(name(value), earlier))
        }
        return value
    }
}

private func decodeString(_ value: JSONValue, _ location: String) throws -> String {
    guard case .string(let text) = value else { throw JobFileError(location, "must be a string, not \(value.kindName)") }
    return text
}

extension Key where Value == String {
    /// Non-empty text: a name, a path, a pattern, a URL.
    package static func text(_ name: String, _ presence: Presence<String>, _ summary: String) -> Key {
        Key(name, presence, summary, schema: ["type": "string", "minLength": 1], written: JSONValue.string) { value, location in
            let text = try decodeString(value, location)
            guard !text.isEmpty else { throw JobFileError(location, "must not be empty") }
            return text
        }
    }
}

extension Key where Value == [String] {
    package static func strings(_ name: String, _ presence: Presence<[String]>, _ summary: String) -> Key {
        Key(name, presence, summary, schema: ["type": "array", "items": ["type": "string"]],
            written: { .array($0.map(JSONValue.string)) }) { value, location in
            guard case .array(let elements) = value else { throw JobFileError(location, "must be an array of strings") }
            return try elements.enumerated().map { try decodeString($0.element, "\(location)[\($0.offset)]") }
        }
    }
}

extension Key where Value == [String: String] {
    /// HTTP header names to values (or to environment variables holding them).
    package static func headers(_ name: String, _ summary: String) -> Key {
        Key(name, .defaults([:]), summary,
            schema: ["type": "object", "propertyNames": ["pattern": "^[A-Za-z0-9_-]+$"], "additionalProperties": ["type": "string"]],
            written: { .object($0.mapValues(JSONValue.string)) }) { value, location in
            guard case .object(let fields) = value else { throw JobFileError(location, "must be an object, not \(value.kindName)") }
            var headers: [String: String] = [:]
            for (header, value) in fields.sorted(by: { $0.key < $1.key }) {
                guard !header.isEmpty, header.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                    throw JobFileError("\(location).\(header)", "is not a valid header name")
                }
                headers[header] = try decodeString(value, "\(location).\(header)")
            }
            return headers
        }
    }
}

extension Key where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
    /// One of `Value`'s cases, by its raw value.
    package static func choice(_ name: String, _ presence: Presence<Value>, _ summary: String) -> Key {
        let names = Value.allCases.map(\.rawValue)
        let missing = "is required (" + names.dropLast().joined(separator: ", ") + " or \(names.last ?? ""))"
        return Key(name, presence, summary, schema: ["type": "string", "enum": .array(names.map(JSONValue.string))],
                   missing: missing, written: { .string($0.rawValue) }) { value, location in
            let text = try decodeString(value, location)
            guard let picked = Value(rawValue: text) else {
                throw JobFileError(location, "must be one of \(names.joined(separator: ", ")), not \(Quoted.value(text))")
            }
            return picked
        }
    }
}

extension Key {
    /// A non-empty list of `Element`'s cases (repeats allowed), in the order written.
    package static func choices<Element>(_ name: String, noun: String, _ presence: Presence<[Element]>, _ summary: String) -> Key
    where Value == [Element], Element: RawRepresentable & CaseIterable & Sendable, Element.RawValue == String {
        let names = Element.allCases.map(\.rawValue).map(JSONValue.string)
        return Key(name, presence, summary, schema: ["type": "array", "items": ["enum": .array(names)], "minItems": 1],
                   written: { .array($0.map { .string($0.rawValue) }) }) { value, location in
            guard case .array(let elements) = value else { throw JobFileError(location, "must be an array, not \(value.kindName)") }
            guard !elements.isEmpty else { throw JobFileError(location, "must name at least one \(noun)") }
            return try elements.enumerated().map { offset, element in
                let place = "\(location)[\(offset)]"
                let text = try decodeString(element, place)
                // A list names things (fields, corners), as `derive` names values: a typo gets the nearest name.
                guard let picked = Element(rawValue: text) else {
                    throw JobFileError(place, Suggestion.unknown(noun, text, known: Element.allCases.map(\.rawValue)))
                }
                return picked
            }
        }
    }
}

/// A declared key that runner refuses, with the reason; declared so it is not taken for a typo
/// and so editors show the reason.
public enum Unsupported: Sendable {
    /// What a key's `written` gives for a value of it: none exists, and a closure taking one is
    /// code the compiler reports as never executed.
    var json: JSONValue { switch self {} }
}

extension Key where Value == Unsupported {
    package static func unsupported(_ name: String, because reason: String) -> Key {
        Key(name, .optional(), "Not supported: \(reason).", schema: ["not": [:]], written: \.json) { _, location in
            throw JobFileError(location, "is not supported: \(reason)")
        }
    }
}

/// A rule between an object's keys, checked by the reader and stated in the schema.
public enum KeyRule: Sendable {
    /// Exactly one of these keys is given (a source's kind).
    case exactlyOne([String])
    /// At least one of these keys is given (a box's width or height).
    case atLeastOne([String])
    /// These keys apply only alongside one of `keys` (a folder's or a bucket's filters). The reader
    /// rejects them through `finish()`, which catches every key left unread; the schema says it up front.
    case onlyWith([String], [String])

    package static func exactlyOne(_ keys: any KeyDeclaration...) -> KeyRule { .exactlyOne(keys.map(\.name)) }
    package static func atLeastOne(_ keys: any KeyDeclaration...) -> KeyRule { .atLeastOne(keys.map(\.name)) }
    package static func onlyWith(_ key: any KeyDeclaration, _ keys: any KeyDeclaration...) -> KeyRule { .onlyWith([key.name], keys.map(\.name)) }

    /// The problem with an object that has `given` keys, at `path` or at the key it concerns.
    package func violation(given: (String) -> Bool, path: String, location: (String) -> String) -> JobFileError? {
        switch self {
        case .exactlyOne(let keys):
            return keys.filter(given).count == 1 ? nil : JobFileError(path, "must have exactly one of \(keys.joined(separator: ", "))")
        case .atLeastOne(let keys):
            let listed = keys.dropLast().joined(separator: ", ") + " or \(keys.last ?? "")"
            return keys.contains(where: given) ? nil : JobFileError(location(keys[0]), "\(listed) is required")
        case .onlyWith: return nil
        }
    }
}

/// The keys an object may have and the rules between them.
public struct ObjectShape: Sendable {
    package let keys: [any KeyDeclaration]
    package let rules: [KeyRule]

    package init(_ keys: [any KeyDeclaration], rules: [KeyRule] = []) { (self.keys, self.rules) = (keys, rules) }

    /// `extra` adds properties that are not keys of the shape (a tag such as `op`).
    package func schema(description: String, extra: [String: JSONValue] = [:], required extraRequired: [String] = []) -> [String: JSONValue] {
        var properties = extra
        var required = extraRequired
        var alternatives: [JSONValue] = []
        var dependents: [String: JSONValue] = [:]
        for key in keys {
            properties[key.name] = key.schema
            let spellings = ObjectReader.spellings(of: key.name)
            for other in spellings.dropFirst() {
                guard case .object(var same) = key.schema else { continue }
                same["description"] = .string("The same key as \"\(key.name)\"; give one of them.")
                properties[other] = .object(same)
                dependents[key.name] = ["not": ["required": [.string(other)]]]
            }
            if key.isRequired, spellings.count == 1 {
                required.append(key.name)
            } else if key.isRequired {
                alternatives.append(["anyOf": .array(spellings.map { ["required": [.string($0)]] })])
            }
        }
        var schema: [String: JSONValue] = [
            "description": .string(description), "type": "object",
            "properties": .object(properties), "additionalProperties": false,
        ]
        if !required.isEmpty { schema["required"] = .array(required.map(JSONValue.string)) }
        for rule in rules {
            switch rule {
            case .exactlyOne(let names): alternatives.append(["oneOf": .array(names.map { ["required": [.string($0)]] })])
            case .atLeastOne(let names): alternatives.append(["anyOf": .array(names.map { ["required": [.string($0)]] })])
            case .onlyWith(let keys, let names):
                let required: JSONValue = keys.count == 1 ? ["required": [.string(keys[0])]]
                    : ["anyOf": .array(keys.map { ["required": [.string($0)]] })]
                for name in names { dependents[name] = required }
            }
        }
        if !alternatives.isEmpty { schema["allOf"] = .array(alternatives) }
        if !dependents.isEmpty { schema["dependentSchemas"] = .object(dependents) }
        return schema
    }
}

/// An object whose `tag` key (`op`, `type`) picks which keys it has: a chain step, a format.
public struct TaggedShape: Sendable {
    public struct Variant: Sendable {
        /// The tag's value, then any aliases.
        package let names: [String]
        package let summary: String
        package let shape: ObjectShape

        package init(names: [String], summary: String, shape: ObjectShape) {
            (self.names, self.summary, self.shape) = (names, summary, shape)
        }
    }

    package let tag: String
    /// What a variant is called in errors ("unknown op").
    package let noun: String
    package let summary: String
    package let variants: [Variant]

    package init(tag: String, noun: String, summary: String, variants: [Variant]) {
        (self.tag, self.noun, self.summary, self.variants) = (tag, noun, summary, variants)
    }

    /// The tag must be one of the variants' names; each variant's keys then apply (`if`/`then`, so
    /// an unknown tag gives one error, not one per variant).
    package func schema(description: String) -> JSONValue {
        let names = variants.flatMap(\.names).map(JSONValue.string)
        let branches: [JSONValue] = variants.map { variant in
            let pick: JSONValue = ["enum": .array(variant.names.map(JSONValue.string))]
            let described: JSONValue = ["enum": .array(variant.names.map(JSONValue.string)), "description": .string(summary)]
            return ["if": ["properties": [tag: pick], "required": [.string(tag)]],
                    "then": .object(variant.shape.schema(description: variant.summary, extra: [tag: described], required: [tag]))]
        }
        return ["description": .string(description), "type": "object", "required": [.string(tag)],
                "properties": [tag: ["description": .string(summary), "enum": .array(names)]], "allOf": .array(branches)]
    }
}

/// A key whose value is an object: one with keys of its own (`concurrency`, `format.jpeg`), or
/// one whose tag picks them (`format`).
public struct ObjectKey: KeyDeclaration {
    public enum Content: Sendable {
        case fixed(ObjectShape)
        case tagged(TaggedShape)
    }

    public let name: String
    public let isRequired: Bool
    package let summary: String
    package let content: Content

    package init(_ name: String, required: Bool = false, _ content: Content, _ summary: String) {
        (self.name, isRequired, self.content, self.summary) = (name, required, content, summary)
    }

    public var schema: JSONValue {
        switch content {
        case .fixed(let shape): .object(shape.schema(description: summary))
        case .tagged(let tagged): tagged.schema(description: summary)
        }
    }
}

/// A required key whose value is an array of objects: sources, outputs, a chain.
public struct ListKey: KeyDeclaration {
    public let name: String
    package let summary: String
    package let element: ObjectKey.Content
    /// For a list that must not be empty, what one element is called ("source"); nil: may be empty.
    package let noun: String?

    package init(_ name: String, of element: ObjectKey.Content, nonEmpty noun: String? = nil, _ summary: String) {
        (self.name, self.element, self.noun, self.summary) = (name, element, noun, summary)
    }

    public var isRequired: Bool { true }

    public var schema: JSONValue {
        var schema: [String: JSONValue] = [
            "description": .string(summary), "type": "array",
            "items": ObjectKey(name, element, "One element of \(name).").schema,
        ]
        if noun != nil { schema["minItems"] = 1 }
        return .object(schema)
    }
}
