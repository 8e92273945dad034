internal import CVips
import Foundation

struct PNGEncoder: OutputEncoder {
    static let type = "png"
    let compression: Int

    init(reading options: ObjectReader) throws {
        compression = try options.int("compression", default: 6, .range(0, 9))
    }

    var identifier: String { canonicalIdentifier(Self.type, [("compression", "\(compression)")]) }

    var supportsAlpha: Bool { true }

    func encode(_ image: VipsImageHandle) throws(VipsError) -> Data {
        try image.encode("pngsave") { cvips_pngsave_buffer($0, $1, $2, Int32(compression)) }
    }
}
