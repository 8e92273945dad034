internal import CVips
import Foundation

struct WebPEncoder: OutputEncoder {
    static let type = "webp"
    static let keys = ["quality", "lossless", "nearLossless", "effort", "alphaQuality"]
    let quality: Int
    let lossless: Bool
    /// Lossless after a lossy pre-pass whose strength `quality` sets (libvips turns lossless on).
    let nearLossless: Bool
    let effort: Int
    let alphaQuality: Int

    init(reading options: ObjectReader) throws {
        quality = try options.int("quality", default: 80, .range(1, 100))
        lossless = try options.bool("lossless", default: false)
        nearLossless = try options.bool("nearLossless", default: false)
        effort = try options.int("effort", default: 4, .range(0, 6))
        alphaQuality = try options.int("alphaQuality", default: 100, .range(0, 100))
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("lossless", "\(lossless)"), ("nearLossless", "\(nearLossless)"),
                                        ("effort", "\(effort)"), ("alphaQuality", "\(alphaQuality)")])
    }

    var supportsAlpha: Bool { true }
    var canAnimate: Bool { true }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        try image.encode("webpsave") {
            cvips_webpsave_buffer($0, $1, $2, Int32(quality), lossless ? 1 : 0, nearLossless ? 1 : 0, Int32(effort),
                                  Int32(alphaQuality), strip ? 1 : 0)
        }
    }
}
