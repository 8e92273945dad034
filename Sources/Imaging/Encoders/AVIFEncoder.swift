internal import CVips
import Foundation
import Model
import Keys

package struct AVIFEncoder: OutputEncoder {
    package static let type = "avif"
    package static let extensions: [String] = ["avif"]
    package static let summary = "AVIF, written by libvips' heifsave with AV1 compression (libheif with aom)."
    package static let quality = Key.integer("quality", .range(1, 100), .defaults(50), "Quality; higher is larger and closer to the source.")
    package static let effort = Key.integer("effort", .range(0, 9), .defaults(4), "CPU effort; higher is slower and smaller.")
    package static let lossless = Key.flag("lossless", default: false, "Lossless coding.")
    package static let keys: [any KeyDeclaration] = [quality, effort, lossless]
    package let quality: Int
    package let effort: Int
    package let lossless: Bool

    package init(reading options: ObjectReader) throws {
        quality = try options.read(Self.quality)
        effort = try options.read(Self.effort)
        lossless = try options.read(Self.lossless)
    }

    package var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("effort", "\(effort)"), ("lossless", "\(lossless)")])
    }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        try image.encode("heifsave") {
            cvips_avifsave_buffer($0, $1, $2, Int32(quality), Int32(effort), lossless ? 1 : 0, metadata.saverKeep)
        }
    }
}
