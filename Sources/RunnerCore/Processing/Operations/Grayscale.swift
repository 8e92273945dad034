internal import CVips

/// Convert to one band of lightness (alpha, if any, is kept).
struct Grayscale: ImageOperation {
    static let name = "grayscale"
    static let summary = "Convert to one band of lightness (alpha is kept)."
    static let keys: [any KeyDeclaration] = []

    init(reading parameters: ObjectReader, context: OperationContext) throws {}

    var identifier: String { canonicalIdentifier(Self.name, []) }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_B_W) }
    }
}
