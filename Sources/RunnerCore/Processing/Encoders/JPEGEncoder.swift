internal import CVips
import Foundation

struct JPEGEncoder: OutputEncoder {
    static let type = "jpeg"
    let quality: Int
    let progressive: Bool

    init(reading options: ObjectReader) throws {
        quality = try options.int("quality", default: 80, .range(1, 100))
        progressive = try options.bool("progressive", default: false)
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("progressive", "\(progressive)")])
    }

    var supportsAlpha: Bool { false }

    func encode(_ image: VipsImageHandle) throws(VipsError) -> Data {
        try image.encode("jpegsave") { cvips_jpegsave_buffer($0, $1, $2, Int32(quality), progressive ? 1 : 0) }
    }
}
