internal import CVips
import Foundation

/// GIF through libvips' cgif saver: quantised to a palette; alpha becomes 1-bit transparency.
struct GIFEncoder: OutputEncoder {
    static let type = "gif"
    static let keys = ["colours", "bitdepth", "dither", "effort"]
    /// 1-8: the palette has 2^bitdepth entries.
    let bitdepth: Int
    let dither: Double
    let effort: Int

    init(reading options: ObjectReader) throws {
        bitdepth = try paletteBitDepth(options, allowed: Array(1...8)) ?? 8
        dither = try options.double("dither", default: 1, .range(0, 1))
        effort = try options.int("effort", default: 7, .range(1, 10))
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("bitdepth", "\(bitdepth)"), ("dither", dither.canonical), ("effort", "\(effort)")])
    }

    var supportsAlpha: Bool { true }
    var canAnimate: Bool { true }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        try image.encode("gifsave") { cvips_gifsave_buffer($0, $1, $2, dither, Int32(effort), Int32(bitdepth), strip ? 1 : 0) }
    }
}
