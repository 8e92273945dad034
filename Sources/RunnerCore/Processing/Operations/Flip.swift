internal import CVips

/// Mirror the image: `horizontal` swaps left and right, `vertical` swaps top and bottom.
struct Flip: ImageOperation {
    static let name = "flip"
    static let summary = "Mirror the image."
    static let direction = Key<Direction>.choice("direction", .required, "horizontal mirrors left-right, vertical turns it upside down.")
    static let keys: [any KeyDeclaration] = [direction]

    enum Direction: String, CaseIterable, Sendable { case horizontal, vertical }

    let direction: Direction

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        direction = try parameters.read(Self.direction)
    }

    var identifier: String { canonicalIdentifier(Self.name, [("direction", direction.rawValue)]) }

    /// A vertical flip reads the last row first.
    var needsRandomAccess: Bool { direction == .vertical }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("flip") { cvips_flip($0, $1, direction == .horizontal ? VIPS_DIRECTION_HORIZONTAL : VIPS_DIRECTION_VERTICAL) }
    }
}
