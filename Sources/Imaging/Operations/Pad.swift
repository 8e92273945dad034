internal import CVips
import Keys

package struct Pad: ImageOperation {
    package static let name = "pad"
    package static let summary = "Grow the canvas, never cropping: to at least width x height with the image placed by gravity, or by top, right, bottom and left margins. A translucent background adds alpha."
    package static let width = Key.integer("width", .pixels(.side), .optional("the image's width"), "Least canvas width in pixels.")
    package static let height = Key.integer("height", .pixels(.side), .optional("the image's height"), "Least canvas height in pixels.")
    package static let gravity = Key.choice("gravity", .defaults(Crop.Gravity.centre),
                                    "With width/height: where the image goes (attention and entropy apply to crops only).")
    package static let background = Key.colour("background", .defaults(.black), "The added canvas's colour.")
    private static let marginKeys = ["top", "right", "bottom", "left"].map {
        Key.integer($0, .pixels(.margin), .defaults(0), "Pixels added at the \($0), instead of width/height.")
    }
    package static let keys: [any KeyDeclaration] = [width, height, gravity, background] + marginKeys

    package enum Extent: Sendable, Equatable {
        case size(width: Int?, height: Int?, gravity: Crop.Gravity)
        case margins(top: Int, right: Int, bottom: Int, left: Int)
    }

    package let extent: Extent
    package let background: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        if parameters.has(Self.width) || parameters.has(Self.height) {
            if let key = Self.marginKeys.first(where: parameters.has) {
                throw parameters.error(key, "give either width/height or margins, not both")
            }
            let gravity = try parameters.read(Self.gravity)
            if gravity.isSmart { throw parameters.error(Self.gravity, "\(gravity.rawValue) applies to crops only") }
            extent = .size(width: try parameters.optional(Self.width),
                           height: try parameters.optional(Self.height), gravity: gravity)
        } else {
            if parameters.has(Self.gravity) { throw parameters.error(Self.gravity, "applies to width/height only") }
            let margins = try Self.marginKeys.map { try parameters.read($0) }
            guard margins.contains(where: { $0 > 0 }) else {
                throw parameters.error(Self.width, "give width and/or height, or at least one of top, right, bottom, left")
            }
            extent = .margins(top: margins[0], right: margins[1], bottom: margins[2], left: margins[3])
        }
        background = try parameters.read(Self.background)
    }

    package var identifier: String {
        switch extent {
        case .size(let width, let height, let gravity):
            canonicalIdentifier(Self.name, [("width", width.map(String.init) ?? "auto"), ("height", height.map(String.init) ?? "auto"),
                                            ("gravity", gravity.rawValue), ("background", background.canonical)])
        case .margins(let top, let right, let bottom, let left):
            canonicalIdentifier(Self.name, [("top", "\(top)"), ("right", "\(right)"), ("bottom", "\(bottom)"), ("left", "\(left)"),
                                            ("background", background.canonical)])
        }
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let (x, y, width, height): (Int, Int, Int, Int)
        switch extent {
        case .size(let targetWidth, let targetHeight, let gravity):
            (width, height) = (max(targetWidth ?? 0, image.width), max(targetHeight ?? 0, image.height))
            (x, y) = gravity.origin(spareX: width - image.width, spareY: height - image.height)
        case .margins(let top, let right, let bottom, let left):
            (x, y, width, height) = (left, top, image.width + left + right, image.height + top + bottom)
        }
        guard width != image.width || height != image.height else { return image }
        return try image.embedded(x: x, y: y, width: width, height: height, background: background)
    }
}
