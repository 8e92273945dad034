internal import CVips
import Foundation
import Model
import Keys

package struct WebPEncoder: QualitySearchable {
    package static let type = "webp"
    package static let extensions: [String] = ["webp"]
    package static let summary = "WebP; animated sources stay animated."
    package static let quality = QualitySetting.key(default: 80)
    package static let lossless = Key.flag("lossless", default: false, "Lossless coding.")
    package static let nearLossless = Key.flag("nearLossless", default: false, "Lossless coding after a lossy pre-pass set by quality.")
    package static let effort = Key.integer("effort", .range(0, 6), .defaults(4), "CPU effort; higher is slower and smaller.")
    package static let alphaQuality = Key.integer("alphaQuality", .range(0, 100), .defaults(100), "Quality of the alpha band.")
    package static let smartSubsample = Key.flag("smartSubsample", default: false,
        "Sharper chroma subsampling (libwebp's sharp YUV): cleaner colour edges at the same quality, slower to encode.")
    package static let keys: [any KeyDeclaration] = [quality, lossless, nearLossless, effort, alphaQuality, smartSubsample]
    package var quality: Int
    package var target: QualityTarget?
    package let qualityGiven: Bool
    package let lossless: Bool
    /// Lossless after a lossy pre-pass whose strength `quality` sets (libvips turns lossless on).
    package let nearLossless: Bool
    package let effort: Int
    package let alphaQuality: Int
    package let smartSubsample: Bool

    package init(reading options: ObjectReader) throws {
        (quality, target, qualityGiven) = try options.quality(Self.quality)
        lossless = try options.read(Self.lossless)
        nearLossless = try options.read(Self.nearLossless)
        effort = try options.read(Self.effort)
        alphaQuality = try options.read(Self.alphaQuality)
        smartSubsample = try options.read(Self.smartSubsample)
        try checkTarget(options, Self.quality)
    }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("quality", target?.identifier ?? "\(quality)"), ("lossless", "\(lossless)"), ("nearLossless", "\(nearLossless)"),
                                        ("effort", "\(effort)"), ("alphaQuality", "\(alphaQuality)"), ("smartSubsample", "\(smartSubsample)")])
    }

    package var losslessOption: String? { lossless ? "lossless" : nearLossless ? "nearLossless" : nil }

    package var canAnimate: Bool { true }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        let data = try image.encode("webpsave") {
            cvips_webpsave_buffer($0, $1, $2, Int32(quality), lossless ? 1 : 0, nearLossless ? 1 : 0, Int32(effort),
                                  Int32(alphaQuality), smartSubsample ? 1 : 0, metadata.saverKeep)
        }
        // libvips 8.14's webpsave ignores `strip` (libvips issue #3340): it writes the EXIF (GPS
        // included), XMP and ICC chunks regardless, so they are cut out of the container here.
        return metadata.saverKeep == CVIPS_KEEP_NONE && !MetadataPolicy.saversApplyIt ? try Self.removingMetadata(data) : data
    }

    /// The WebP file without its ICCP, EXIF and XMP chunks, and with VP8X's flags for them cleared.
    package static func removingMetadata(_ data: Data) throws(VipsError) -> Data {
        let bytes = [UInt8](data)
        let unreadable = VipsError(operation: "webpsave", message: "webpsave wrote a WebP container runner cannot read")
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WEBP".utf8) else {
            throw unreadable
        }
        var kept = Array(bytes[0..<12])
        var offset = 12
        while offset + 8 <= bytes.count {
            let size = bytes[offset + 4..<offset + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
            let end = offset + 8 + size + size % 2  // chunks are padded to an even length
            guard end <= bytes.count else { throw unreadable }
            if !["ICCP", "EXIF", "XMP "].contains(where: { bytes[offset..<offset + 4].elementsEqual($0.utf8) }) {
                kept += bytes[offset..<end]
            }
            offset = end
        }
        guard offset == bytes.count else { throw unreadable }
        if kept.count > 20, kept[12..<16].elementsEqual("VP8X".utf8) {
            kept[20] &= ~(0x20 | 0x08 | 0x04)  // the ICC, EXIF and XMP flags
        }
        let riffSize = UInt32(kept.count - 8)
        kept.replaceSubrange(4..<8, with: (0..<4).map { UInt8(truncatingIfNeeded: riffSize >> (8 * $0)) })
        return Data(kept)
    }
}
