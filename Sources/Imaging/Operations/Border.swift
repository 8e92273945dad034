internal import CVips
import Keys

/// `pad` is the op that grows the canvas instead.
package struct Border: ImageOperation {
    package static let name = "border"
    package static let summary = "Paint a frame over the image's edges, keeping its size (Kingfisher's BorderImageProcessor); a translucent colour blends over the edge."
    package static let width = Key.integer("width", .pixels(.side), .required, "Frame width in pixels.")
    package static let colour = Key.colour("colour", .defaults(.black), "The frame's colour.")
    package static let keys: [any KeyDeclaration] = [width, colour]
    package let width: Int
    package let colour: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        width = try parameters.read(Self.width)
        colour = try parameters.read(Self.colour)
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("width", "\(width)"), ("colour", colour.canonical)]) }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        var frame = try image.colourLayer(colour)
        let inner = (width: image.width - 2 * width, height: image.height - 2 * width)
        if inner.width > 0 && inner.height > 0 {
            let clear = try frame.constant([0, 0, 0, 0]).derive("extract_area") {
                cvips_extract_area($0, $1, 0, 0, Int32(inner.width), Int32(inner.height))
            }
            frame = try frame.inserting(clear, x: width, y: width)
        }
        return try image.compositing(frame, mode: VIPS_BLEND_MODE_OVER)
    }
}
