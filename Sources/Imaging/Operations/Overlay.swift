internal import CVips
import Keys

package struct Overlay: ImageOperation {
    package static let name = "overlay"
    package static let summary = "Cover the image with a colour at opacity x the colour's alpha, only where the image is opaque (Kingfisher's OverlayImageProcessor, whose fraction is 1 - opacity)."
    package static let colour = Key.colour("colour", .required, "The covering colour.")
    package static let opacity = Key.number("opacity", .range(0, 1), .defaults(0.5), "How much the colour covers.")
    package static let keys: [any KeyDeclaration] = [colour, opacity]
    package let colour: Colour
    package let opacity: Double

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        colour = try parameters.read(Self.colour)
        opacity = try parameters.read(Self.opacity)
    }

    package var identifier: String {
        canonicalIdentifier(Self.name, [("colour", colour.canonical), ("opacity", opacity.canonical)])
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.compositing(image.colourLayer(colour, opacity: opacity), mode: VIPS_BLEND_MODE_ATOP)
    }
}
