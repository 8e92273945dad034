internal import CVips

/// Remove alpha by laying the image on an opaque `background` (white by default, the colour
/// runner flattens onto for formats without alpha). Images without alpha pass unchanged.
struct Flatten: ImageOperation {
    static let name = "flatten"
    static let summary = "Remove alpha by laying the image on an opaque background."
    static let background = Key.colour("background", .defaults(Colour(red: 255, green: 255, blue: 255, alpha: 255)),
                                       "An opaque colour (no alpha digits, or ff).")
    static let keys: [any KeyDeclaration] = [background]
    let background: Colour

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        background = try parameters.read(Self.background)
        guard background.alpha == 255 else { throw parameters.error(Self.background, "must be opaque (no alpha digits, or ff)") }
    }

    var identifier: String { canonicalIdentifier(Self.name, [("background", background.canonical)]) }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        guard image.hasAlpha else { return image }
        let values = image.values(of: background, bands: image.colourBands)
        return try image.derive("flatten") { input, output in
            values.withUnsafeBufferPointer { cvips_flatten(input, output, $0.baseAddress, Int32($0.count)) }
        }
    }
}
