internal import CVips
import Foundation
import Model
import Keys

package struct PNGEncoder: OutputEncoder {
    package static let type = "png"
    package static let extensions: [String] = ["png"]
    package static let summary = "PNG; 16 bits per sample with bitdepth 16."
    package static let compression = Key.integer("compression", .range(0, 9), .defaults(6), "zlib compression level.")
    package static let palette = Key.flag("palette", default: false, "Quantise to at most 256 colours with libimagequant.")
    package static let colours = Palette.colours("With palette: how many colours, rounded up to a bit depth.")
    package static let depths = [1, 2, 4, 8, 16]
    package static let bitdepth = Palette.bitdepth(depths, "Bits per sample; below 8 colour images get a palette, 16 keeps 16-bit sources at full depth.")
    package static let dither = Key.number("dither", .range(0, 1), .defaults(1), "Dithering when quantising (with palette).")
    package static let keys: [any KeyDeclaration] = [compression, palette, colours, bitdepth, dither]
    package let compression: Int
    package let palette: Bool
    /// 1, 2, 4, 8 or 16. Below 8, libvips writes colour images with a palette.
    package let bitdepth: Int
    /// Only used when quantising (palette, or bitdepth below 8).
    package let dither: Double

    package init(reading options: ObjectReader) throws {
        compression = try options.read(Self.compression)
        palette = try options.read(Self.palette)
        if !palette, let key = [Self.colours, Self.dither].first(where: options.has) {
            throw options.error(key, "applies only with \"palette\": true")
        }
        bitdepth = try Palette.bitDepth(options, colours: Self.colours, bitdepth: Self.bitdepth, allowed: Self.depths) ?? 8
        if palette && bitdepth == 16 { throw options.error(Self.bitdepth, "a palette image has at most 8 bits") }
        dither = try options.read(Self.dither)
    }

    private var quantises: Bool { palette || bitdepth < 8 }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("compression", "\(compression)"), ("palette", "\(palette)"), ("bitdepth", "\(bitdepth)")]
                            + (quantises ? [("dither", dither.canonical)] : []))
    }

    package var sixteenBit: Bool { bitdepth == 16 }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        try image.encode("pngsave") {
            cvips_pngsave_buffer($0, $1, $2, Int32(compression), palette ? 1 : 0, dither, Int32(bitdepth), metadata.saverKeep)
        }
    }
}
