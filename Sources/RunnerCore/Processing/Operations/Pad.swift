internal import CVips

/// Grow the canvas with `background`: to at least `width` x `height` with the image placed by
/// `gravity`, or by `top`/`right`/`bottom`/`left` margins. Never crops.
struct Pad: ImageOperation {
    static let name = "pad"

    enum Extent: Sendable, Equatable {
        case size(width: Int?, height: Int?, gravity: Crop.Gravity)
        case margins(top: Int, right: Int, bottom: Int, left: Int)
    }

    let extent: Extent
    let background: Colour

    private static let marginKeys = ["top", "right", "bottom", "left"]

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        let sized = parameters.has("width") || parameters.has("height")
        if sized {
            if let key = Self.marginKeys.first(where: parameters.has) {
                throw parameters.error(key, "give either width/height or margins, not both")
            }
            let gravity = try parameters.choice("gravity", default: Crop.Gravity.centre)
            if gravity.isSmart { throw parameters.error("gravity", "\(gravity.rawValue) applies to crops only") }
            extent = .size(width: try parameters.coordinate("width", parameters.optionalInt("width", .positive)),
                           height: try parameters.coordinate("height", parameters.optionalInt("height", .positive)), gravity: gravity)
        } else {
            if parameters.has("gravity") { throw parameters.error("gravity", "applies to width/height only") }
            let margins = try Self.marginKeys.map { try parameters.coordinate($0, parameters.int($0, default: 0, .nonNegative)) ?? 0 }
            guard margins.contains(where: { $0 > 0 }) else {
                throw parameters.error("width", "give width and/or height, or at least one of top, right, bottom, left")
            }
            extent = .margins(top: margins[0], right: margins[1], bottom: margins[2], left: margins[3])
        }
        background = try parameters.colour("background", default: .black)
    }

    var identifier: String {
        switch extent {
        case .size(let width, let height, let gravity):
            canonicalIdentifier(Self.name, [("width", width.map(String.init) ?? "auto"), ("height", height.map(String.init) ?? "auto"),
                                            ("gravity", gravity.rawValue), ("background", background.canonical)])
        case .margins(let top, let right, let bottom, let left):
            canonicalIdentifier(Self.name, [("top", "\(top)"), ("right", "\(right)"), ("bottom", "\(bottom)"), ("left", "\(left)"),
                                            ("background", background.canonical)])
        }
    }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let (x, y, width, height): (Int, Int, Int, Int)
        switch extent {
        case .size(let targetWidth, let targetHeight, let gravity):
            width = max(targetWidth ?? 0, image.width)
            height = max(targetHeight ?? 0, image.height)
            (x, y) = gravity.origin(spareX: width - image.width, spareY: height - image.height)
        case .margins(let top, let right, let bottom, let left):
            (x, y, width, height) = (left, top, image.width + left + right, image.height + top + bottom)
        }
        guard width != image.width || height != image.height else { return image }
        return try image.embedded(x: x, y: y, width: width, height: height, background: background)
    }
}
