internal import CVips
import Support
import Model
import Keys
/// One step of an output's chain (Kingfisher's `ImageProcessor`): its `identifier` spells out every
/// parameter in canonical form and is part of every item's fingerprint, so editing a chain re-runs
/// exactly the outputs it belongs to. Adding an op: a conforming type and one line in
/// `operationCatalogue`; its parameters are read through their declarations (`keys`), so `runner
/// schema` describes exactly what the reader accepts.
package protocol ImageOperation: Sendable {
    /// The `op` value in a job file.
    static var name: String { get }
    /// Other `op` values that mean the same op (the identifier always uses `name`).
    static var aliases: [String] { get }
    /// What it does, for `runner schema`.
    static var summary: String { get }
    /// Every parameter it may read (besides `op`): name, type, range, default, meaning.
    static var keys: [any KeyDeclaration] { get }
    /// Rules between its parameters (width or height).
    static var rules: [KeyRule] { get }
    /// Reads and validates the op's parameters (errors name the exact key); relative paths resolve against `baseDirectory`.
    init(reading parameters: ObjectReader, baseDirectory: String) throws
    var identifier: String { get }
    /// True when the op reads pixels out of top-to-bottom order (rotations, smart crops), so
    /// the decode cannot stream.
    var needsRandomAccess: Bool { get }
    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle
}

extension ImageOperation {
    package static var keys: [any KeyDeclaration] { [] }
    package static var aliases: [String] { [] }
    package static var rules: [KeyRule] { [] }
    package var needsRandomAccess: Bool { false }
}

/// Builds the canonical `name(key:value,...)` spelling of an op or encoder.
package func canonicalIdentifier(_ name: String, _ parameters: [(String, String)]) -> String {
    "\(name)(" + parameters.map { "\($0.0):\($0.1)" }.joined(separator: ",") + ")"
}

extension Double {
    package var canonical: String { canonicalNumber(self) }
}

/// Every op a chain may use, by its job-file name.
package let operationCatalogue: [any ImageOperation.Type] = [
    Thumbnail.self,
    Crop.self,
    Rotate.self,
    Autorotate.self,
    Sharpen.self,
    Blur.self,
    Grayscale.self,
    Resize.self,
    Flip.self,
    Gamma.self,
    Tint.self,
    ColorControls.self,
    Overlay.self,
    RoundCorners.self,
    Border.self,
    Pad.self,
    Composite.self,
    Flatten.self,
]

/// A chain step as the reader declares it and `runner schema` describes it: `op` picks an op of
/// the catalogue, whose keys then apply.
package let operationShape = TaggedShape(tag: "op", noun: "op", summary: "The op; composite is also called watermark.",
                                 variants: operationCatalogue.map { type in
    TaggedShape.Variant(names: [type.name] + type.aliases, summary: type.summary, shape: ObjectShape(type.keys, rules: type.rules))
})

/// An output's chain, read from the job file.
package struct OperationChain: Sendable {
    package let steps: [any ImageOperation]

    package init(steps: [any ImageOperation]) { self.steps = steps }

    /// Kingfisher's `|>` join; empty for a chain that only re-encodes.
    package var identifier: String { steps.map(\.identifier).joined(separator: "|>") }

    package static func read(_ elements: [(value: JSONValue, path: String)], baseDirectory: String) throws -> OperationChain {
        let types = Dictionary(uniqueKeysWithValues: operationCatalogue.flatMap { type in
            ([type.name] + type.aliases).map { ($0, type) }
        })
        return OperationChain(steps: try elements.map { element in
            let reader = try ObjectReader(element.value, path: element.path)
            return try reader.read(choosing: operationShape, among: types) { try $0.init(reading: reader, baseDirectory: baseDirectory) }
        })
    }
}
