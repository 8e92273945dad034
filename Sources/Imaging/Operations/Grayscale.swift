internal import CVips
import Keys

package struct Grayscale: ImageOperation {
    package static let name = "grayscale"
    package static let summary = "Convert to one band of lightness (alpha is kept)."

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {}

    package var identifier: String { canonicalIdentifier(Self.name, []) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_B_W) }
    }
}
