internal import CVips
import Foundation

struct JPEGEncoder: OutputEncoder {
    static let type = "jpeg"
    static let summary = "JPEG (libjpeg-turbo); alpha is flattened onto white."
    static let quality = Key.integer("quality", .range(1, 100), .defaults(80), "Quality; higher is larger and closer to the source.")
    static let progressive = Key.flag("progressive", default: false, "Progressive (interlaced) JPEG.")
    static let chromaSubsampling = Key.choice("chromaSubsampling", .defaults(ChromaSubsampling.auto),
                                              "auto: libvips picks 4:4:4 at quality 90 and above, else 4:2:0.")
    static let optimizeCoding = Key.flag("optimizeCoding", default: false, "Optimal Huffman tables: smaller, same pixels.")
    static let keys: [any KeyDeclaration] = [quality, progressive, chromaSubsampling, optimizeCoding] + mozjpegOptions

    enum ChromaSubsampling: String, CaseIterable, Sendable {
        /// libvips' choice: 4:2:0, or 4:4:4 at quality 90 and above.
        case auto
        case yuv420 = "4:2:0"
        case yuv444 = "4:4:4"
    }

    let quality: Int
    let progressive: Bool
    let chromaSubsampling: ChromaSubsampling
    let optimizeCoding: Bool

    /// mozjpeg-only options. This libvips build links libjpeg-turbo, where libvips accepts them
    /// and ignores them with a warning; rejecting them is more honest than a silent no-op.
    static let mozjpegOptions = ["trellisQuant", "overshootDeringing", "optimizeScans"].map {
        Key.unsupported($0, because: "this libvips build uses libjpeg-turbo, which has no mozjpeg extensions")
    }

    init(reading options: ObjectReader) throws {
        quality = try options.read(Self.quality)
        progressive = try options.read(Self.progressive)
        chromaSubsampling = try options.read(Self.chromaSubsampling)
        optimizeCoding = try options.read(Self.optimizeCoding)
        for key in Self.mozjpegOptions { _ = try options.optional(key) }
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("progressive", "\(progressive)"),
                                        ("chromaSubsampling", chromaSubsampling.rawValue), ("optimizeCoding", "\(optimizeCoding)")])
    }

    var supportsAlpha: Bool { false }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        let subsample = switch chromaSubsampling {
        case .auto: VIPS_FOREIGN_SUBSAMPLE_AUTO
        case .yuv420: VIPS_FOREIGN_SUBSAMPLE_ON
        case .yuv444: VIPS_FOREIGN_SUBSAMPLE_OFF
        }
        return try image.encode("jpegsave") {
            cvips_jpegsave_buffer($0, $1, $2, Int32(quality), progressive ? 1 : 0, subsample, optimizeCoding ? 1 : 0, strip ? 1 : 0)
        }
    }
}
