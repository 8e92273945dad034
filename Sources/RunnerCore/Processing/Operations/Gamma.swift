internal import CVips

/// Gamma curve on the colour bands (libvips `gamma`): each value v in 0...1 becomes
/// v^(1/exponent), so exponents above 1 brighten the mid-tones. Alpha is left alone.
struct Gamma: ImageOperation {
    static let name = "gamma"
    static let summary = "Gamma curve (libvips gamma): each value v in 0...1 becomes v^(1/exponent), so above 1 brightens the mid-tones. Alpha is untouched."
    static let exponent = Key.number("exponent", .positive, .defaults(2.2), "The curve's exponent.")
    static let keys: [any KeyDeclaration] = [exponent]
    let exponent: Double

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        exponent = try parameters.read(Self.exponent)
    }

    var identifier: String { canonicalIdentifier(Self.name, [("exponent", exponent.canonical)]) }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.mappingColour { colour throws(VipsError) in
            try colour.derive("gamma") { cvips_gamma($0, $1, exponent) }.cast(like: colour)
        }
    }
}
