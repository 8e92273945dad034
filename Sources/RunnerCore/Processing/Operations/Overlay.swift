internal import CVips

/// Cover the image with `colour` at `opacity` (Kingfisher's OverlayImageProcessor, whose
/// `fraction` is 1 - opacity). Only where the image is: transparent areas stay transparent.
struct Overlay: ImageOperation {
    static let name = "overlay"
    static let summary = "Cover the image with a colour at opacity x the colour's alpha, only where the image is opaque (Kingfisher's OverlayImageProcessor, whose fraction is 1 - opacity)."
    static let colour = Key.colour("colour", .required, "The covering colour.")
    static let opacity = Key.number("opacity", .range(0, 1), .defaults(0.5), "How much the colour covers.")
    static let keys: [any KeyDeclaration] = [colour, opacity]
    let colour: Colour
    let opacity: Double

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        colour = try parameters.read(Self.colour)
        opacity = try parameters.read(Self.opacity)
    }

    var identifier: String {
        canonicalIdentifier(Self.name, [("colour", colour.canonical), ("opacity", opacity.canonical)])
    }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.compositing(image.colourLayer(colour, opacity: opacity), mode: VIPS_BLEND_MODE_ATOP)
    }
}
