internal import CVips

/// Cover the image with `colour` at `opacity` (Kingfisher's OverlayImageProcessor, whose
/// `fraction` is 1 - opacity). Only where the image is: transparent areas stay transparent.
struct Overlay: ImageOperation {
    static let name = "overlay"
    static let keys = ["colour", "opacity"]
    let colour: Colour
    let opacity: Double

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        colour = try parameters.requiredColour("colour")
        opacity = try parameters.double("opacity", default: 0.5, .range(0, 1))
    }

    var identifier: String {
        canonicalIdentifier(Self.name, [("colour", colour.canonical), ("opacity", opacity.canonical)])
    }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.compositing(image.colourLayer(colour, opacity: opacity), mode: VIPS_BLEND_MODE_ATOP)
    }
}
