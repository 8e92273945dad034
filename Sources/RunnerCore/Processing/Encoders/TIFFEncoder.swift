internal import CVips
import Foundation

/// A single-image TIFF (no pyramid).
struct TIFFEncoder: OutputEncoder {
    static let type = "tiff"
    static let keys = ["compression", "quality"]

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
        compression = try options.choice("compression", default: .jpeg)
        if !compression.isLossy && options.has("quality") {
            throw options.error("quality", "applies only to jpeg and webp compression")
        }
        quality = try options.int("quality", default: 80, .range(1, 100))
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
