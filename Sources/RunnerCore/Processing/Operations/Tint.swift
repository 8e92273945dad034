internal import CVips

/// Lay `colour` over the image by the colour's own alpha (Kingfisher's TintImageProcessor:
/// a flat colour, source-over). `#ff000040` reddens a little; an opaque colour covers everything.
struct Tint: ImageOperation {
    static let name = "tint"
    static let summary = "Lay a colour over the image by the colour's alpha (Kingfisher's TintImageProcessor): #ff000040 reddens a little, an opaque colour covers everything."
    static let colour = Key.colour("colour", .required, "The tint.")
    static let keys: [any KeyDeclaration] = [colour]
    let colour: Colour

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        colour = try parameters.read(Self.colour)
    }

    var identifier: String { canonicalIdentifier(Self.name, [("colour", colour.canonical)]) }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.compositing(image.colourLayer(colour), mode: VIPS_BLEND_MODE_OVER)
    }
}
