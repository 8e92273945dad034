internal import CVips
import Foundation
import Model
import Keys

package struct JPEGEncoder: QualitySearchable {
    package static let type = "jpeg"
    package static let extensions: [String] = ["jpg", "jpeg", "jpe", "jfif"]
    package static let summary = "JPEG (libjpeg-turbo); alpha is flattened onto white."
    package static let quality = QualitySetting.key(default: 80)
    package static let progressive = Key.flag("progressive", default: false, "Progressive (interlaced) JPEG.")
    package static let chromaSubsampling = Key.choice("chromaSubsampling", .defaults(ChromaSubsampling.auto),
                                              "auto: libvips picks 4:4:4 at quality 90 and above, else 4:2:0.")
    package static let optimizeCoding = Key.flag("optimizeCoding", default: false, "Optimal Huffman tables: smaller, same pixels.")
    package static let keys: [any KeyDeclaration] = [quality, progressive, chromaSubsampling, optimizeCoding] + mozjpegOptions

    package enum ChromaSubsampling: String, CaseIterable, Sendable {
        /// libvips' choice: 4:2:0, or 4:4:4 at quality 90 and above.
        case auto
        case yuv420 = "4:2:0"
        case yuv444 = "4:4:4"
    }

    package var quality: Int
    package var target: QualityTarget?
    package let qualityGiven: Bool
    package let progressive: Bool
    package let chromaSubsampling: ChromaSubsampling
    package let optimizeCoding: Bool

    /// mozjpeg-only options. This libvips build links libjpeg-turbo, where libvips accepts them
    /// and ignores them with a warning; rejecting them is more honest than a silent no-op.
    package static let mozjpegOptions = ["trellisQuant", "overshootDeringing", "optimizeScans"].map {
        Key.unsupported($0, because: "this libvips build uses libjpeg-turbo, which has no mozjpeg extensions")
    }

    package init(reading options: ObjectReader) throws {
        (quality, target, qualityGiven) = try options.quality(Self.quality)
        progressive = try options.read(Self.progressive)
        chromaSubsampling = try options.read(Self.chromaSubsampling)
        optimizeCoding = try options.read(Self.optimizeCoding)
        for key in Self.mozjpegOptions { _ = try options.optional(key) }
    }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("quality", target?.identifier ?? "\(quality)"), ("progressive", "\(progressive)"),
                                        ("chromaSubsampling", chromaSubsampling.rawValue), ("optimizeCoding", "\(optimizeCoding)")])
    }

    package var supportsAlpha: Bool { false }
    package var iptcContainer: IPTCContainer? { .photoshop }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        let subsample = switch chromaSubsampling {
        case .auto: VIPS_FOREIGN_SUBSAMPLE_AUTO
        case .yuv420: VIPS_FOREIGN_SUBSAMPLE_ON
        case .yuv444: VIPS_FOREIGN_SUBSAMPLE_OFF
        }
        return try image.encode("jpegsave") {
            cvips_jpegsave_buffer($0, $1, $2, Int32(quality), progressive ? 1 : 0, subsample, optimizeCoding ? 1 : 0, metadata.saverKeep)
        }
    }
}
