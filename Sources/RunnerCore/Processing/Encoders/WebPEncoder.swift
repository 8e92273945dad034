internal import CVips
import Foundation

struct WebPEncoder: OutputEncoder {
    static let type = "webp"
    let quality: Int
    let lossless: Bool

    init(reading options: ObjectReader) throws {
        quality = try options.int("quality", default: 80, .range(1, 100))
        lossless = try options.bool("lossless", default: false)
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("lossless", "\(lossless)")])
    }

    var supportsAlpha: Bool { true }

    func encode(_ image: VipsImageHandle) throws(VipsError) -> Data {
        try image.encode("webpsave") { cvips_webpsave_buffer($0, $1, $2, Int32(quality), lossless ? 1 : 0) }
    }
}
