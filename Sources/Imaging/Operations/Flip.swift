internal import CVips
import Keys

package struct Flip: ImageOperation {
    package static let name = "flip"
    package static let summary = "Mirror the image."
    package static let direction = Key<Direction>.choice("direction", .required, "horizontal mirrors left-right, vertical turns it upside down.")
    package static let keys: [any KeyDeclaration] = [direction]

    package enum Direction: String, CaseIterable, Sendable { case horizontal, vertical }

    package let direction: Direction

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        direction = try parameters.read(Self.direction)
    }

    package var identifier: String { canonicalIdentifier(Self.name, [("direction", direction.rawValue)]) }

    /// A vertical flip reads the last row first.
    package var needsRandomAccess: Bool { direction == .vertical }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("flip") { cvips_flip($0, $1, direction == .horizontal ? VIPS_DIRECTION_HORIZONTAL : VIPS_DIRECTION_VERTICAL) }
    }
}
