internal import CVips
import Foundation

/// AVIF through libvips' heifsave with AV1 compression (libheif + aom in this build).
struct AVIFEncoder: OutputEncoder {
    static let type = "avif"
    static let summary = "AVIF, written by libvips' heifsave with AV1 compression (libheif with aom)."
    static let quality = Key.integer("quality", .range(1, 100), .defaults(50), "Quality; higher is larger and closer to the source.")
    static let effort = Key.integer("effort", .range(0, 9), .defaults(4), "CPU effort; higher is slower and smaller.")
    static let lossless = Key.flag("lossless", default: false, "Lossless coding.")
    static let keys: [any KeyDeclaration] = [quality, effort, lossless]
    let quality: Int
    let effort: Int
    let lossless: Bool

    init(reading options: ObjectReader) throws {
        quality = try options.read(Self.quality)
        effort = try options.read(Self.effort)
        lossless = try options.read(Self.lossless)
    }

    var identifier: String {
        canonicalIdentifier(Self.type, [("quality", "\(quality)"), ("effort", "\(effort)"), ("lossless", "\(lossless)")])
    }

    var supportsAlpha: Bool { true }

    func encode(_ image: VipsImageHandle, strip: Bool) throws(VipsError) -> Data {
        try image.encode("heifsave") {
            cvips_avifsave_buffer($0, $1, $2, Int32(quality), Int32(effort), lossless ? 1 : 0, strip ? 1 : 0)
        }
    }
}
