package import CVips
import Foundation
import Support
import Keys

/// The file is read once, when the job is read, so its content is part of the identifier:
/// replacing the watermark re-runs every item that uses it.
package struct Composite: ImageOperation {
    package static let name = "composite"
    package static let aliases = ["watermark"]
    package static let summary = "Lay another image over this one (Kingfisher's blend and compositing processors). Its content is part of the identifier, so replacing the file re-runs every item that uses it."
    package static let image = Key.text("image", .required, "The image file, relative to the job file, at most \(Quoted.bytes(largestImage)); it must exist when the job is read.")
    package static let gravity = Key.choice("gravity", .defaults(Crop.Gravity.centre),
                                    "Where the image goes (attention and entropy apply to crops only).")
    package static let offsetX = Key.integer("offsetX", .pixels(.offset), .defaults(0), "Pixels to move it right (negative: left).")
    package static let offsetY = Key.integer("offsetY", .pixels(.offset), .defaults(0), "Pixels to move it down (negative: up).")
    package static let opacity = Key.number("opacity", .range(0, 1), .defaults(1), "How opaque the laid image is.")
    package static let blend = Key.choice("blend", .defaults(Blend.over), "libvips blend mode.")
    package static let scale = Key.number("scale", .positive, .optional("its own size"),
                                  "Resize it to this fraction of this image's width.")
    package static let keys: [any KeyDeclaration] = [image, gravity, offsetX, offsetY, opacity, blend, scale]

    /// libvips' VipsBlendMode, by its own names.
    package enum Blend: String, CaseIterable, Sendable {
        case clear, source, over, `in`, out, atop, dest
        case destOver = "dest-over", destIn = "dest-in", destOut = "dest-out", destAtop = "dest-atop"
        case xor, add, saturate, multiply, screen, overlay, darken, lighten
        case colourDodge = "colour-dodge", colourBurn = "colour-burn", hardLight = "hard-light", softLight = "soft-light"
        case difference, exclusion

        package var vipsMode: VipsBlendMode { VipsBlendMode(rawValue: vipsEnum(vips_blend_mode_get_type(), rawValue)) }
    }

    /// The largest overlay file read, 16 MiB, as a job file: each worker holds it for the whole run,
    /// and a logo or a frame is a few hundred kilobytes.
    package static let largestImage = 16 << 20

    package let imagePath: String
    package let imageBytes: Data
    package let imageHash: String
    package let gravity: Crop.Gravity
    package let offsetX: Int
    package let offsetY: Int
    package let opacity: Double
    package let blend: Blend
    package let scale: Double?

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        imagePath = Paths.resolve(try parameters.read(Self.image), against: baseDirectory)
        do { imageBytes = try FileDescriptor.readWhole(imagePath, limit: Self.largestImage) } catch {
            throw parameters.error(Self.image, "cannot read \(imagePath): \(error)")
        }
        var hash = StableHash()
        hash.combine(bytes: imageBytes)
        imageHash = hash.hex
        gravity = try parameters.read(Self.gravity)
        if gravity.isSmart { throw parameters.error(Self.gravity, "\(gravity.rawValue) applies to crops only") }
        offsetX = try parameters.read(Self.offsetX)
        offsetY = try parameters.read(Self.offsetY)
        opacity = try parameters.read(Self.opacity)
        blend = try parameters.read(Self.blend)
        scale = try parameters.optional(Self.scale)
    }

    /// The file's content, not its path: the same watermark moved elsewhere renders the same.
    package var identifier: String {
        canonicalIdentifier(Self.name, [("image", imageHash), ("gravity", gravity.rawValue), ("offsetX", "\(offsetX)"),
                                        ("offsetY", "\(offsetY)"), ("opacity", opacity.canonical), ("blend", blend.rawValue),
                                        ("scale", scale?.canonical ?? "none")])
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        var overlay = try VipsImageHandle.decoding(imageBytes, operation: "load \(imagePath)")
        if let scale {
            // Any positive scale is accepted; no width beyond libvips' largest coordinate (nor an
            // integer conversion that traps).
            let width = min(max(1, (Double(image.width) * scale).rounded()), Double(CVIPS_MAX_COORD))
            let factor = width / Double(overlay.width)
            overlay = try overlay.derive("resize") { cvips_resize($0, $1, factor, factor, VIPS_KERNEL_LANCZOS3) }
        }
        if opacity < 1 {
            let faded = try overlay.inRGB().withOpaqueAlpha()
            overlay = try faded.linear(Array(repeating: 1, count: faded.bands - 1) + [opacity], Array(repeating: 0, count: faded.bands))
                .cast(like: faded)
        }
        let origin = gravity.origin(spareX: image.width - overlay.width, spareY: image.height - overlay.height)
        return try image.compositing(overlay, mode: blend.vipsMode, x: origin.x + offsetX, y: origin.y + offsetY)
    }
}
