internal import CVips
import Foundation

struct PNGEncoder: OutputEncoder {
    static let type = "png"
    static let keys = ["compression", "palette", "colours", "bitdepth", "dither"]
    let compression: Int
    let palette: Bool
    /// 1, 2, 4, 8 or 16. Below 8, libvips writes colour images with a palette.
    let bitdepth: Int
    /// Only used when quantising (palette, or bitdepth below 8).
    let dither: Double

    init(reading options: ObjectReader) throws {
        compression = try options.int("compression", default: 6, .range(0, 9))
        palette = try options.bool("palette", default: false)
        if !palette, let key = ["colours", "dither"].first(where: options.has) {
            throw options.error(key, "applies only with \"palette\": true")
        }
        bitdepth = try paletteBitDepth(options, allowed: [1, 2, 4, 8, 16]) ?? 8
        if palette && bitdepth == 16 { throw options.error("bitdepth", "a palette image has at most 8 bits") }
        dither = try options.double("dither", default: 1, .range(0, 1))
    }

    private var quantises: Bool { palette || bitdepth < 8 }

    var identifier: String {
        canonicalIdentifier(Self.type, [("compression", "\(compression)"), ("palette", "\(palette)"), ("bitdepth", "\(bitdepth)")]
                            + (quantises ? [("dither", dither.canonical)] : []))
    }

    var supportsAlpha: Bool { true }
    var sixteenBit: Bool { bitdepth == 16 }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        try image.encode("pngsave") {
            cvips_pngsave_buffer($0, $1, $2, Int32(compression), palette ? 1 : 0, dither, Int32(bitdepth), strip ? 1 : 0)
        }
    }
}
