import Foundation

/// An output format: reads its options from `outputs[i].format`, has an identifier that
/// spells them all out (part of the fingerprint), and turns a finished image into bytes.
protocol OutputEncoder: Sendable {
    /// The `type` value in a job file.
    static var type: String { get }
    init(reading options: ObjectReader) throws
    var identifier: String { get }
    /// Whether the format stores an alpha band; if not, alpha is flattened onto white first.
    var supportsAlpha: Bool { get }
    func encode(_ image: VipsImageHandle) throws(VipsError) -> Data
}

/// Every output format, by its job-file `type`.
let encoderCatalogue: [any OutputEncoder.Type] = [
    JPEGEncoder.self,
    PNGEncoder.self,
    WebPEncoder.self,
]

func readEncoder(_ reader: ObjectReader) throws -> any OutputEncoder {
    let types = Dictionary(uniqueKeysWithValues: encoderCatalogue.map { ($0.type, $0) })
    let name = try reader.requiredString("type")
    guard let type = types[name] else {
        throw reader.error("type", "unknown format \"\(name)\" (known: \(types.keys.sorted().joined(separator: ", ")))")
    }
    let encoder = try type.init(reading: reader)
    try reader.finish()
    return encoder
}
