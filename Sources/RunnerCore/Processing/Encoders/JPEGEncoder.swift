internal import CVips
import Foundation

struct JPEGEncoder: OutputEncoder {
    static let type = "jpeg"
    static let keys = ["quality", "progressive", "chromaSubsampling", "optimizeCoding"] + mozjpegOptions

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
    static let mozjpegOptions = ["trellisQuant", "overshootDeringing", "optimizeScans"]

    init(reading options: ObjectReader) throws {
        quality = try options.int("quality", default: 80, .range(1, 100))
        progressive = try options.bool("progressive", default: false)
        chromaSubsampling = try options.choice("chromaSubsampling", default: .auto)
        optimizeCoding = try options.bool("optimizeCoding", default: false)
        for key in Self.mozjpegOptions where options.has(key) {
            throw options.error(key, "is not supported: this libvips build uses libjpeg-turbo, which has no mozjpeg extensions")
        }
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
