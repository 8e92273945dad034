internal import CVips
import Keys

package struct Tint: ImageOperation {
    package static let name = "tint"
    package static let summary = "Lay a colour over the image by the colour's alpha (Kingfisher's TintImageProcessor): #ff000040 reddens a little, an opaque colour covers everything."
    package static let colour = Key.colour("colour", .required, "The tint.")
    package static let keys: [any KeyDeclaration] = [colour]
    package let colour: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        colour = try parameters.read(Self.colour)
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("colour", colour.canonical)]) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.compositing(image.colourLayer(colour), mode: VIPS_BLEND_MODE_OVER)
    }
}
