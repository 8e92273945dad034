internal import CVips

/// Gaussian blur with standard deviation `sigma` (pixels).
struct Blur: ImageOperation {
    static let name = "blur"
    static let summary = "Gaussian blur."
    static let sigma = Key.number("sigma", .positive, .required, "Standard deviation in pixels.")
    static let keys: [any KeyDeclaration] = [sigma]
    let sigma: Double

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        sigma = try parameters.read(Self.sigma)
    }

    var identifier: String { canonicalIdentifier(Self.name, [("sigma", sigma.canonical)]) }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("gaussblur") { cvips_gaussblur($0, $1, sigma) }
    }
}
