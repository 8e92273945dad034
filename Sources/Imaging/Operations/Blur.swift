internal import CVips
import Keys

package struct Blur: ImageOperation {
    package static let name = "blur"
    package static let summary = "Gaussian blur."
    package static let sigma = Key.number("sigma", .positive, .required, "Standard deviation in pixels.")
    package static let keys: [any KeyDeclaration] = [sigma]
    package let sigma: Double

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        sigma = try parameters.read(Self.sigma)
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("sigma", sigma.canonical)]) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("gaussblur") { cvips_gaussblur($0, $1, sigma) }
    }
}
