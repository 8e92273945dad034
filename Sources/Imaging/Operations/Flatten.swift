internal import CVips
import Keys

/// Remove alpha by laying the image on an opaque `background` (white by default, the colour
/// runner flattens onto for formats without alpha). Images without alpha pass unchanged.
package struct Flatten: ImageOperation {
    package static let name = "flatten"
    package static let summary = "Remove alpha by laying the image on an opaque background."
    package static let background = Key.colour("background", .defaults(Colour(red: 255, green: 255, blue: 255, alpha: 255)),
                                       "An opaque colour (no alpha digits, or ff).")
    package static let keys: [any KeyDeclaration] = [background]
    package let background: Colour

    package init(reading parameters: ObjectReader, context: OperationContext) throws {
        background = try parameters.read(Self.background)
        guard background.alpha == 255 else { throw parameters.error(Self.background, "must be opaque (no alpha digits, or ff)") }
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("background", background.canonical)]) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        guard image.hasAlpha else { return image }
        let values = image.values(of: background, bands: image.colourBands)
        return try image.derive("flatten") { input, output in
            values.withUnsafeBufferPointer { cvips_flatten(input, output, $0.baseAddress, Int32($0.count)) }
        }
    }
}
