internal import CVips
import Foundation

/// A single-image TIFF (no pyramid).
struct TIFFEncoder: OutputEncoder {
    static let type = "tiff"
    static let summary = "A single-image TIFF (no pyramid); with jpeg compression alpha is flattened onto white."
    static let compression = Key.choice("compression", .defaults(Compression.jpeg), "The codec (jpeg, as sharp).")
    static let quality = Key.integer("quality", .range(1, 100), .defaults(80), "Quality, for jpeg and webp compression only.")
    static let keys: [any KeyDeclaration] = [compression, quality]

    enum Compression: String, CaseIterable, Sendable {
        case none, jpeg, deflate, packbits, lzw, webp, zstd

        var vipsCompression: VipsForeignTiffCompression {
            switch self {
            case .none: VIPS_FOREIGN_TIFF_COMPRESSION_NONE
            case .jpeg: VIPS_FOREIGN_TIFF_COMPRESSION_JPEG
            case .deflate: VIPS_FOREIGN_TIFF_COMPRESSION_DEFLATE
            case .packbits: VIPS_FOREIGN_TIFF_COMPRESSION_PACKBITS
            case .lzw: VIPS_FOREIGN_TIFF_COMPRESSION_LZW
            case .webp: VIPS_FOREIGN_TIFF_COMPRESSION_WEBP
            case .zstd: VIPS_FOREIGN_TIFF_COMPRESSION_ZSTD
            }
        }

        /// Lossy codecs take a quality.
        var isLossy: Bool { self == .jpeg || self == .webp }
    }

    let compression: Compression
    let quality: Int

    init(reading options: ObjectReader) throws {
        compression = try options.read(Self.compression)
        if !compression.isLossy && options.has(Self.quality) {
            throw options.error(Self.quality, "applies only to jpeg and webp compression")
        }
        quality = try options.read(Self.quality)
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("compression", compression.rawValue)] + (compression.isLossy ? [("quality", "\(quality)")] : []))
    }

    /// libvips writes JPEG-compressed TIFFs without alpha (it drops the band unflattened).
    var supportsAlpha: Bool { compression != .jpeg }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        try image.encode("tiffsave") {
            cvips_tiffsave_buffer($0, $1, $2, compression.vipsCompression, Int32(quality), strip ? 1 : 0)
        }
    }
}
