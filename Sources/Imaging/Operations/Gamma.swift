internal import CVips
import Keys

package struct Gamma: ImageOperation {
    package static let name = "gamma"
    package static let summary = "Gamma curve (libvips gamma): each value v in 0...1 becomes v^(1/exponent), so above 1 brightens the mid-tones. Alpha is untouched."
    package static let exponent = Key.number("exponent", .positive, .defaults(2.2), "The curve's exponent.")
    package static let keys: [any KeyDeclaration] = [exponent]
    package let exponent: Double

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        exponent = try parameters.read(Self.exponent)
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("exponent", exponent.canonical)]) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.mappingColour { colour throws(VipsError) in
            try colour.derive("gamma") { cvips_gamma($0, $1, exponent) }.cast(like: colour)
        }
    }
}
