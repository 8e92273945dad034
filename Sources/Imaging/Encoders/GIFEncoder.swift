internal import CVips
import Foundation
import Model
import Keys

package struct GIFEncoder: OutputEncoder {
    package static let type = "gif"
    package static let extensions: [String] = ["gif"]
    package static let summary = "GIF through libvips' cgif saver; transparency is 1-bit; animated sources stay animated."
    package static let colours = Palette.colours("How many colours, rounded up to a bit depth.")
    package static let depths = Array(1...8)
    package static let bitdepth = Palette.bitdepth(depths, "Bits per palette entry: 2^bitdepth colours.")
    package static let dither = Key.number("dither", .range(0, 1), .defaults(1), "Dithering.")
    package static let effort = Key.integer("effort", .range(1, 10), .defaults(7), "CPU effort; higher is slower and smaller.")
    package static let keys: [any KeyDeclaration] = [colours, bitdepth, dither, effort]
    /// 1-8: the palette has 2^bitdepth entries.
    package let bitdepth: Int
    package let dither: Double
    package let effort: Int

    package init(reading options: ObjectReader) throws {
        bitdepth = try Palette.bitDepth(options, colours: Self.colours, bitdepth: Self.bitdepth, allowed: Self.depths) ?? 8
        dither = try options.read(Self.dither)
        effort = try options.read(Self.effort)
    }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("bitdepth", "\(bitdepth)"), ("dither", dither.canonical), ("effort", "\(effort)")])
    }

    package var canAnimate: Bool { true }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        try image.encode("gifsave") { cvips_gifsave_buffer($0, $1, $2, dither, Int32(effort), Int32(bitdepth), metadata.saverKeep) }
    }
}
