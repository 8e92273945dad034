internal import CVips
import Keys

package struct Sharpen: ImageOperation {
    package static let name = "sharpen"
    package static let summary = "Unsharp mask on lightness (libvips sharpen); the defaults are libvips' own."
    package static let sigma = Key.number("sigma", .positive, .defaults(0.5), "The blur's standard deviation in pixels.")
    package static let m1 = Key.number("m1", .nonNegative, .defaults(0), "Sharpening of flat areas.")
    package static let m2 = Key.number("m2", .nonNegative, .defaults(3), "Sharpening of edges.")
    package static let keys: [any KeyDeclaration] = [sigma, m1, m2]
    package let sigma: Double
    package let m1: Double
    package let m2: Double

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        sigma = try parameters.read(Self.sigma)
        m1 = try parameters.read(Self.m1)
        m2 = try parameters.read(Self.m2)
    }

    package var identifier: String {
        canonicalIdentifier(Self.name, [("sigma", sigma.canonical), ("m1", m1.canonical), ("m2", m2.canonical)])
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("sharpen") { cvips_sharpen($0, $1, sigma, m1, m2) }
    }
}
