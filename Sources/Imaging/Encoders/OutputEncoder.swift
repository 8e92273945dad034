internal import CVips
import Foundation
import Support
import Model
import Keys

/// An output format: reads its options from `outputs[i].format`, has an identifier that
/// spells them all out (part of the fingerprint), and turns a finished image into bytes.
package protocol OutputEncoder: Sendable {
    /// The `type` value in a job file.
    static var type: String { get }
    /// The file name extensions that name what it writes (lower case, the usual one first); empty
    /// for `auto`, whose format is the source's, so its paths are not checked.
    static var extensions: [String] { get }
    /// What it writes, for `runner schema`.
    static var summary: String { get }
    /// Every option it may read (besides `type`): name, type, range, default, meaning.
    static var keys: [any KeyDeclaration] { get }
    init(reading options: ObjectReader) throws
    var identifier: String { get }
    /// Whether the format stores an alpha band; if not, alpha is flattened onto white first.
    var supportsAlpha: Bool { get }
    /// Whether the format stores several frames with delays, so animated sources stay animated.
    var canAnimate: Bool { get }
    /// Whether the encoder wants 16 bits per sample (else everything is cast to 8).
    var sixteenBit: Bool { get }
    /// The encoder that actually writes a source in `format` (`auto` picks one; others are themselves).
    func resolved(for format: SourceFormat) -> any OutputEncoder
    /// The form its saver writes IPTC records in; nil when it writes none.
    var iptcContainer: IPTCContainer? { get }
    /// Writes the metadata `metadata` keeps, of what the image carries (see `MetadataPolicy.saverKeep`).
    func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data
}

extension OutputEncoder {
    package var supportsAlpha: Bool { true }
    package var canAnimate: Bool { false }
    package var sixteenBit: Bool { false }
    package var iptcContainer: IPTCContainer? { nil }
    package func resolved(for format: SourceFormat) -> any OutputEncoder { self }
}

/// Every output format, by its job-file `type`.
package let encoderCatalogue: [any OutputEncoder.Type] = [
    JPEGEncoder.self,
    PNGEncoder.self,
    WebPEncoder.self,
    AVIFEncoder.self,
    JXLEncoder.self,
    TIFFEncoder.self,
    GIFEncoder.self,
    AutoEncoder.self,
]

/// Image formats runner does not write, by extension: a `.heic` output path promises bytes no
/// encoder of the catalogue makes. (`.heif` is left out: AVIF is a HEIF file.)
private let otherImageExtensions = ["heic": "heic", "jp2": "jpeg2000", "bmp": "bmp"]

/// Why a file named `fileName` should not hold what `encoder` writes: its extension names another
/// image format (`.webp` with `"type": "jpeg"` would put JPEG bytes under a WebP name). Nil when
/// the extension names this format, names no image format, or is missing, and for `auto`.
package func extensionMismatch(_ fileName: String, for encoder: any OutputEncoder) -> String? {
    let writes = type(of: encoder)
    guard !writes.extensions.isEmpty else { return nil }
    let ext = Paths.splitExtension(fileName).ext
    let lowered = ext.lowercased()
    guard !writes.extensions.contains(lowered) else { return nil }
    guard let named = encoderCatalogue.first(where: { $0.extensions.contains(lowered) })?.type ?? otherImageExtensions[lowered] else {
        return nil
    }
    let names = writes.extensions.map { "." + $0 }
    let rename = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " or " + names.last!
    let retype = encoderCatalogue.contains { $0.type == named } ? ", or make \"type\" \"\(named)\"" : ""
    return "the extension \".\(ext)\" names another format (\(named)) than format.type \"\(writes.type)\": "
        + "name the file \(rename)\(retype)"
}

/// An output's `format` as the reader declares it and `runner schema` describes it: `type` picks
/// an encoder of the catalogue, whose options then apply.
package let encoderShape = TaggedShape(tag: "type", noun: "format", summary: "The output format.", variants: encoderCatalogue.map { type in
    TaggedShape.Variant(names: [type.type], summary: type.summary, shape: ObjectShape(type.keys))
})

package func readEncoder(_ reader: ObjectReader) throws -> any OutputEncoder {
    let types = Dictionary(uniqueKeysWithValues: encoderCatalogue.map { ($0.type, $0) })
    return try reader.read(choosing: encoderShape, among: types) { try $0.init(reading: reader) }
}

/// Palette formats take a number of `colours` or a `bitdepth`, one of `allowed`.
package enum Palette {
    package static func colours(_ summary: String) -> Key<Int> {
        Key.integer("colours", .range(2, 256), .optional("256"), summary + " Give colours or bitdepth, not both.")
    }

    package static func bitdepth(_ allowed: [Int], _ summary: String) -> Key<Int> {
        Key.integer("bitdepth", .oneOf(allowed.map(Double.init)), .optional("8"), summary + " Give colours or bitdepth, not both.")
    }

    /// libvips takes the bit depth, so 100 colours means 7 bits, written as 8 (sharp's rule). Nil
    /// when neither is given.
    package static func bitDepth(_ options: ObjectReader, colours: Key<Int>, bitdepth: Key<Int>, allowed: [Int]) throws -> Int? {
        if options.has(colours) && options.has(bitdepth) { throw options.error(bitdepth, "give colours or bitdepth, not both") }
        if let bitdepth = try options.optional(bitdepth) { return bitdepth }
        guard let colours = try options.optional(colours) else { return nil }
        let bits = Int((log2(Double(colours))).rounded(.up))
        return allowed.first { $0 >= bits } ?? 8
    }
}
