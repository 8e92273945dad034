package import CVips
import Foundation
import Model
import Keys

package struct TIFFEncoder: OutputEncoder {
    package static let type = "tiff"
    package static let extensions: [String] = ["tif", "tiff"]
    package static let summary = "A single-image TIFF (no pyramid); with jpeg compression alpha is flattened onto white."
    package static let compression = Key.choice("compression", .defaults(Compression.jpeg), "The codec (jpeg, as sharp).")
    package static let quality = Key.integer("quality", .range(1, 100), .defaults(80), "Quality, for jpeg and webp compression only.")
    package static let keys: [any KeyDeclaration] = [compression, quality]

    package enum Compression: String, CaseIterable, Sendable {
        case none, jpeg, deflate, packbits, lzw, webp, zstd

        package var vipsCompression: VipsForeignTiffCompression {
            VipsForeignTiffCompression(rawValue: vipsEnum(vips_foreign_tiff_compression_get_type(), rawValue))
        }

        /// Lossy codecs take a quality.
        package var isLossy: Bool { self == .jpeg || self == .webp }
    }

    package let compression: Compression
    package let quality: Int

    package init(reading options: ObjectReader) throws {
        compression = try options.read(Self.compression)
        if !compression.isLossy && options.has(Self.quality) {
            throw options.error(Self.quality, "applies only to jpeg and webp compression")
        }
        quality = try options.read(Self.quality)
    }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("compression", compression.rawValue)] + (compression.isLossy ? [("quality", "\(quality)")] : []))
    }

    /// libvips writes JPEG-compressed TIFFs without alpha (it drops the band unflattened).
    package var supportsAlpha: Bool { compression != .jpeg }
    package var iptcContainer: IPTCContainer? { .records }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        try image.encode("tiffsave") {
            cvips_tiffsave_buffer($0, $1, $2, compression.vipsCompression, Int32(quality), metadata.saverKeep)
        }
    }
}
