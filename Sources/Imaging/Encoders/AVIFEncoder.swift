internal import CVips
import Foundation
import Model
import Keys

package struct AVIFEncoder: QualitySearchable {
    package static let type = "avif"
    package static let extensions: [String] = ["avif"]
    package static let summary = "AVIF, written by libvips' heifsave with AV1 compression (libheif with aom)."
    package static let quality = QualitySetting.key(default: 50)
    package static let effort = Key.integer("effort", .range(0, 9), .defaults(4), "CPU effort; higher is slower and smaller.")
    package static let lossless = Key.flag("lossless", default: false, "Lossless coding.")
    package static let keys: [any KeyDeclaration] = [quality, effort, lossless]
    package var quality: Int
    package var target: QualityTarget?
    package let qualityGiven: Bool
    package let effort: Int
    package let lossless: Bool

    package init(reading options: ObjectReader) throws {
        (quality, target, qualityGiven) = try options.quality(Self.quality)
        effort = try options.read(Self.effort)
        lossless = try options.read(Self.lossless)
        try checkTarget(options, Self.quality)
    }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("quality", target?.identifier ?? "\(quality)"), ("effort", "\(effort)"), ("lossless", "\(lossless)")])
    }

    package var losslessOption: String? { lossless ? "lossless" : nil }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        try image.encode("heifsave") {
            cvips_avifsave_buffer($0, $1, $2, Int32(quality), Int32(effort), lossless ? 1 : 0, metadata.saverKeep)
        }
    }
}
