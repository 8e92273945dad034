import Keys

/// White by default: what runner flattens onto for formats without alpha.
package struct Flatten: ImageOperation {
    package static let name = "flatten"
    package static let summary = "Remove alpha by laying the image on an opaque background."
    package static let background = Key.colour("background", .defaults(.white), "An opaque colour (no alpha digits, or ff).")
    package static let keys: [any KeyDeclaration] = [background]
    package let background: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        background = try parameters.read(Self.background)
        guard background.alpha == 255 else { throw parameters.error(Self.background, "must be opaque (no alpha digits, or ff)") }
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("background", background.canonical)]) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle { try image.flattened(onto: background) }
}
