internal import CVips

/// Unsharp mask on lightness (libvips `sharpen`): `sigma` of the blur, `m1` flat-area and `m2`
/// edge gains. Defaults are libvips' own.
struct Sharpen: ImageOperation {
    static let name = "sharpen"
    static let keys = ["sigma", "m1", "m2"]
    let sigma: Double
    let m1: Double
    let m2: Double

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        sigma = try parameters.double("sigma", default: 0.5, .positive)
        m1 = try parameters.double("m1", default: 0, .nonNegative)
        m2 = try parameters.double("m2", default: 3, .nonNegative)
    }

    var identifier: String {
        canonicalIdentifier(Self.name, [("sigma", sigma.canonical), ("m1", m1.canonical), ("m2", m2.canonical)])
    }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("sharpen") { cvips_sharpen($0, $1, sigma, m1, m2) }
    }
}
