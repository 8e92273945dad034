import Support
import Keys

/// A value computed per source from its pixels (a placeholder, a perceptual hash, a colour, a
/// focal point), declared in a job's `derive` list. Like a chain op it is a small value whose
/// `identifier` spells out every parameter in canonical form, so a stored value is computed again
/// only when its settings change. Every one reads the same `DerivationFrame`, made once per source
/// from pixels already decoded. Adding one: a type conforming to this protocol, and one line in `derivedValueCatalogue`.
package protocol DerivedValue: Sendable {
    /// The name in a job's `derive` list, and the value's name wherever it is written.
    static var name: String { get }
    /// What it is, for `runner schema`.
    static var summary: String { get }
    /// The JSON Schema of the value as the site manifest writes it.
    static var valueSchema: JSONValue { get }
    /// Its settings (besides `value`): name, type, range, default, meaning.
    static var keys: [any KeyDeclaration] { get }
    /// Reads and validates the settings; errors name the exact key.
    init(reading settings: ObjectReader) throws
    var identifier: String { get }
    /// The value as a manifest writes it: a string, or for the focal point an object.
    func value(of frame: DerivationFrame) throws(VipsError) -> JSONValue
}

extension DerivedValue {
    package static var keys: [any KeyDeclaration] { [] }
    /// Text, most of them.
    package static var valueSchema: JSONValue { ["type": "string", "description": .string(summary)] }
}

/// A value with no settings.
package protocol PlainDerivedValue: DerivedValue { init() }

extension PlainDerivedValue {
    package init(reading settings: ObjectReader) throws { self.init() }
}

/// Every value `derive` may list, by name.
package let derivedValueCatalogue: [any DerivedValue.Type] = [
    ThumbHash.self,
    PlaceholderDataURL.self,
    BlurHash.self,
    DHash.self,
    PHash.self,
    DominantColour.self,
    FocalPoint.self,
]

/// The catalogue's names, for what lists them: `thumbhash, placeholder, ...`.
package var derivedValueNames: String { derivedValueCatalogue.map { $0.name }.joined(separator: ", ") }

/// An element of `derive` written as an object: `value` picks the value, whose settings then apply.
package let derivedValueShape = TaggedShape(tag: "value", noun: "value", summary: "The derived value.",
                                            variants: derivedValueCatalogue.map { type in
    TaggedShape.Variant(names: [type.name], summary: type.summary, shape: ObjectShape(type.keys))
})

/// A job's `derive` list, read from the job file: each element a value's name (its settings at
/// their defaults) or an object naming it in `value` with settings, each name at most once.
package struct DerivedValues: Sendable {
    package let values: [any DerivedValue]

    package static let none = DerivedValues(values: [])

    package var identifiers: [String] { values.map(\.identifier) }

    package static func key(_ name: String, _ summary: String) -> Key<DerivedValues> {
        let names: JSONValue = .array(derivedValueCatalogue.map { .string($0.name) })
        let element: JSONValue = ["anyOf": [["type": "string", "enum": names],
                                            derivedValueShape.schema(description: "A value with its settings.")]]
        return Key(name, .defaults(.none), summary, schema: ["type": "array", "items": element],
                   written: { .array($0.values.map { .string(type(of: $0).name) }) }) { value, location in
            guard case .array(let elements) = value else { throw JobFileError(location, "must be an array, not \(value.kindName)") }
            return DerivedValues(values: try decodedOnce(elements, at: location, { try read($0, path: $1) }, name: { type(of: $0).name }) {
                "\"\($0)\" is already listed at \(location)[\($1)]"
            })
        }
    }

    private static func read(_ element: JSONValue, path: String) throws -> any DerivedValue {
        let types = Dictionary(uniqueKeysWithValues: derivedValueCatalogue.map { ($0.name, $0) })
        switch element {
        case .string(let name):
            guard let type = types[name] else { throw JobFileError(path, Suggestion.unknown("value", name, known: types.keys)) }
            return try type.init(reading: ObjectReader(.object([:]), path: path, shape: ObjectShape(type.keys)))
        case .object:
            let reader = try ObjectReader(element, path: path)
            return try reader.read(choosing: derivedValueShape, among: types) { try $0.init(reading: reader) }
        default: throw JobFileError(path, "must be a value's name or an object naming it in \"value\", not \(element.kindName)")
        }
    }
}
