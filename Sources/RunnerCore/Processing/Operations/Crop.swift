internal import CVips

/// Cut a region: by box (`x`, `y`, `width`, `height`), or by `width`/`height` placed with `gravity`.
/// A region larger than the image is clipped to it, so one chain works on mixed sizes.
struct Crop: ImageOperation {
    static let name = "crop"

    enum Gravity: String, CaseIterable, Sendable {
        case centre, north, northeast, east, southeast, south, southwest, west, northwest
        case attention, entropy
    }

    enum Placement: Sendable, Equatable {
        case box(x: Int, y: Int)
        case gravity(Gravity)
    }

    let width: Int
    let height: Int
    let placement: Placement

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        width = try parameters.int("width", .positive)
        height = try parameters.int("height", .positive)
        if parameters.has("x") || parameters.has("y") {
            if parameters.has("gravity") { throw parameters.error("gravity", "give either x/y or gravity, not both") }
            placement = .box(x: try parameters.int("x", default: 0, .nonNegative),
                             y: try parameters.int("y", default: 0, .nonNegative))
        } else {
            placement = .gravity(try parameters.choice("gravity", default: .centre))
        }
    }

    var identifier: String {
        switch placement {
        case .box(let x, let y):
            canonicalIdentifier(Self.name, [("x", "\(x)"), ("y", "\(y)"), ("width", "\(width)"), ("height", "\(height)")])
        case .gravity(let gravity):
            canonicalIdentifier(Self.name, [("width", "\(width)"), ("height", "\(height)"), ("gravity", gravity.rawValue)])
        }
    }

    var needsRandomAccess: Bool { placement == .gravity(.attention) || placement == .gravity(.entropy) }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let cropWidth = min(width, image.width)
        let cropHeight = min(height, image.height)
        let spareX = image.width - cropWidth
        let spareY = image.height - cropHeight
        let origin: (x: Int, y: Int)
        switch placement {
        case .box(let x, let y):
            guard x < image.width, y < image.height else {
                throw VipsError(operation: "crop", message: "crop origin \(x),\(y) lies outside the \(image.width)x\(image.height) image")
            }
            origin = (x, y)
            return try image.derive("extract_area") {
                cvips_extract_area($0, $1, Int32(origin.x), Int32(origin.y),
                                   Int32(min(cropWidth, image.width - x)), Int32(min(cropHeight, image.height - y)))
            }
        case .gravity(.attention), .gravity(.entropy):
            let interesting = placement == .gravity(.attention) ? VIPS_INTERESTING_ATTENTION : VIPS_INTERESTING_ENTROPY
            return try image.derive("smartcrop") { cvips_smartcrop($0, $1, Int32(cropWidth), Int32(cropHeight), interesting) }
        case .gravity(let gravity):
            let column = gravity.rawValue.hasSuffix("west") ? 0 : gravity.rawValue.hasSuffix("east") ? 2 : 1
            let row = gravity.rawValue.hasPrefix("north") ? 0 : gravity.rawValue.hasPrefix("south") ? 2 : 1
            origin = (spareX * column / 2, spareY * row / 2)
            return try image.derive("extract_area") {
                cvips_extract_area($0, $1, Int32(origin.x), Int32(origin.y), Int32(cropWidth), Int32(cropHeight))
            }
        }
    }
}
