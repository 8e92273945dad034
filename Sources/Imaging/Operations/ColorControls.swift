internal import CVips
import Keys

package struct ColorControls: ImageOperation {
    package static let name = "colorControls"
    package static let summary = "Kingfisher's ColorControlsProcessor (Core Image's CIColorControls) on sRGB values in 0...1: saturation mixes each pixel with its Rec. 709 luma, then brightness is added, then contrast scales around 0.5. Alpha is untouched."
    package static let brightness = Key.number("brightness", .range(-1, 1), .defaults(0), "Added to every value.")
    package static let contrast = Key.number("contrast", .nonNegative, .defaults(1), "Scale around mid-grey.")
    package static let saturation = Key.number("saturation", .nonNegative, .defaults(1), "0 is grey, 1 unchanged.")
    package static let keys: [any KeyDeclaration] = [brightness, contrast, saturation]
    package let brightness: Double
    package let contrast: Double
    package let saturation: Double

    /// Rec. 709 luma weights, as Core Image uses.
    private static let luma = [0.2126, 0.7152, 0.0722]

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        brightness = try parameters.read(Self.brightness)
        contrast = try parameters.read(Self.contrast)
        saturation = try parameters.read(Self.saturation)
    }

    package var identifier: String {
        canonicalIdentifier(Self.name, [("brightness", brightness.canonical), ("contrast", contrast.canonical),
                                        ("saturation", saturation.canonical)])
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        guard brightness != 0 || contrast != 1 || saturation != 1 else { return image }
        return try image.mappingColour { colour throws(VipsError) in
            var adjusted = colour
            if saturation != 1, colour.bands == 3 {
                // out = luma + s * (in - luma), one 3x3 recombination.
                let matrix = (0..<3).flatMap { row in
                    (0..<3).map { column in (1 - saturation) * Self.luma[column] + (row == column ? saturation : 0) }
                }
                adjusted = try colour.derive("recomb") { input, output in
                    matrix.withUnsafeBufferPointer { cvips_recomb(input, output, $0.baseAddress, 3, 3) }
                }
            }
            // ((v + brightness) - 0.5) * contrast + 0.5, scaled to the image's range.
            let top = colour.maxValue
            let offset = (brightness * top - top / 2) * contrast + top / 2
            adjusted = try adjusted.linear(Array(repeating: contrast, count: colour.bands), Array(repeating: offset, count: colour.bands))
            return try adjusted.cast(like: colour)
        }
    }
}
