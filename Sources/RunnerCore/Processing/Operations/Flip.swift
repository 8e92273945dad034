internal import CVips

/// Mirror the image: `horizontal` swaps left and right, `vertical` swaps top and bottom.
struct Flip: ImageOperation {
    static let name = "flip"
    static let keys = ["direction"]

    enum Direction: String, CaseIterable, Sendable { case horizontal, vertical }

    let direction: Direction

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        guard parameters.has("direction") else { throw parameters.error("direction", "is required (horizontal or vertical)") }
        direction = try parameters.choice("direction", default: .horizontal)
    }

    var identifier: String { canonicalIdentifier(Self.name, [("direction", direction.rawValue)]) }

    /// A vertical flip reads the last row first.
    var needsRandomAccess: Bool { direction == .vertical }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("flip") { cvips_flip($0, $1, direction == .horizontal ? VIPS_DIRECTION_HORIZONTAL : VIPS_DIRECTION_VERTICAL) }
    }
}
