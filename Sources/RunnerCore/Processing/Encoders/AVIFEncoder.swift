internal import CVips
import Foundation

/// AVIF through libvips' heifsave with AV1 compression (libheif + aom in this build).
struct AVIFEncoder: OutputEncoder {
    static let type = "avif"
    static let keys = ["quality", "effort", "lossless"]
    let quality: Int
    let effort: Int
    let lossless: Bool

    init(reading options: ObjectReader) throws {
        quality = try options.int("quality", default: 50, .range(1, 100))
        effort = try options.int("effort", default: 4, .range(0, 9))
        lossless = try options.bool("lossless", default: false)
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("effort", "\(effort)"), ("lossless", "\(lossless)")])
    }

    var supportsAlpha: Bool { true }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        try image.encode("heifsave") {
            cvips_avifsave_buffer($0, $1, $2, Int32(quality), Int32(effort), lossless ? 1 : 0, strip ? 1 : 0)
        }
    }
}
