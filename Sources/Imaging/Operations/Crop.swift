internal import CVips
import Keys

/// A region larger than the image is clipped to it, so one chain works on mixed sizes.
package struct Crop: ImageOperation {
    package static let name = "crop"
    package static let summary = "Cut a region, clipped to the image: a box (x, y, width, height), width and height placed by gravity, or trim: true to remove the border that differs from background by less than threshold (libvips find_trim). An image that is all background is kept as it is."
    package static let width = Key.integer("width", .pixels(.side), .optional(), "Region width in pixels (required unless trim).")
    package static let height = Key.integer("height", .pixels(.side), .optional(), "Region height in pixels (required unless trim).")
    package static let x = Key.integer("x", .pixels(.margin), .defaults(0), "Region's left edge, for a box (instead of gravity).")
    package static let y = Key.integer("y", .pixels(.margin), .defaults(0), "Region's top edge, for a box (instead of gravity).")
    package static let gravity = Key.choice("gravity", .defaults(Gravity.centre),
                                    "Where the region lies; attention and entropy pick it by content.")
    package static let trim = Key.flag("trim", default: false, "Remove a uniform border instead of cutting a given region.")
    package static let threshold = Key.number("threshold", .nonNegative, .defaults(10),
                                      "With trim: how far (in libvips' units) a pixel may differ from the background and still be border.")
    package static let background = Key.colour("background", .optional("the top-left pixel"), "With trim: the border's colour.")
    package static let keys: [any KeyDeclaration] = [width, height, x, y, gravity, trim, threshold, background]

    package enum Gravity: String, CaseIterable, Sendable {
        case centre, north, northeast, east, southeast, south, southwest, west, northwest
        case attention, entropy

        /// attention and entropy pick a region by content; the others are fixed places.
        package var isSmart: Bool { self == .attention || self == .entropy }

        /// 0, 1, 2 for west, centre, east (and north, centre, south).
        package var column: Int { rawValue.hasSuffix("west") ? 0 : rawValue.hasSuffix("east") ? 2 : 1 }
        package var row: Int { rawValue.hasPrefix("north") ? 0 : rawValue.hasPrefix("south") ? 2 : 1 }

        /// Where something `spareX` x `spareY` smaller than its frame goes (negative spare overhangs evenly).
        package func origin(spareX: Int, spareY: Int) -> (x: Int, y: Int) { (spareX * column / 2, spareY * row / 2) }
    }

    package enum Placement: Sendable, Equatable {
        case box(x: Int, y: Int)
        case gravity(Gravity)
        /// Remove the border that differs from `background` (the top-left pixel when nil) by less than `threshold`.
        case trim(threshold: Double, background: Colour?)
    }

    package let width: Int
    package let height: Int
    package let placement: Placement

    /// A gravity crop for other ops (resize's cover).
    package init(width: Int, height: Int, gravity: Gravity) {
        (self.width, self.height, self.placement) = (width, height, .gravity(gravity))
    }

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        if try parameters.read(Self.trim) {
            for key: any KeyDeclaration in [Self.width, Self.height, Self.x, Self.y, Self.gravity] where parameters.has(key) {
                throw parameters.error(key, "does not apply to trim")
            }
            (width, height) = (0, 0)
            placement = .trim(threshold: try parameters.read(Self.threshold), background: try parameters.optional(Self.background))
            return
        }
        (width, height) = (try parameters.read(Self.width), try parameters.read(Self.height))
        if parameters.has(Self.x) || parameters.has(Self.y) {
            if parameters.has(Self.gravity) { throw parameters.error(Self.gravity, "give either x/y or gravity, not both") }
            placement = .box(x: try parameters.read(Self.x), y: try parameters.read(Self.y))
        } else {
            placement = .gravity(try parameters.read(Self.gravity))
        }
    }

    package var identifier: String {
        switch placement {
        case .box(let x, let y):
            canonicalIdentifier(Self.name, [("x", "\(x)"), ("y", "\(y)"), ("width", "\(width)"), ("height", "\(height)")])
        case .gravity(let gravity):
            canonicalIdentifier(Self.name, [("width", "\(width)"), ("height", "\(height)"), ("gravity", gravity.rawValue)])
        case .trim(let threshold, let background):
            canonicalIdentifier(Self.name, [("trim", "true"), ("threshold", threshold.canonical),
                                            ("background", background?.canonical ?? "topleft")])
        }
    }

    /// Smart crops analyse the image first; trim measures it, then cuts: both read it twice.
    package var needsRandomAccess: Bool {
        switch placement {
        case .box: false
        case .gravity(let gravity): gravity.isSmart
        case .trim: true
        }
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let cropWidth = min(width, image.width)
        let cropHeight = min(height, image.height)
        switch placement {
        case .box(let x, let y):
            guard x < image.width, y < image.height else {
                throw VipsError(operation: "crop", message: "crop origin \(x),\(y) lies outside the \(image.width)x\(image.height) image")
            }
            return try image.derive("extract_area") {
                cvips_extract_area($0, $1, Int32(x), Int32(y),
                                   Int32(min(cropWidth, image.width - x)), Int32(min(cropHeight, image.height - y)))
            }
        case .trim(let threshold, let background): return try trim(image, threshold: threshold, background: background)
        case .gravity(.attention), .gravity(.entropy):
            let interesting = placement == .gravity(.attention) ? VIPS_INTERESTING_ATTENTION : VIPS_INTERESTING_ENTROPY
            return try image.derive("smartcrop") { cvips_smartcrop($0, $1, Int32(cropWidth), Int32(cropHeight), interesting) }
        case .gravity(let gravity):
            let origin = gravity.origin(spareX: image.width - cropWidth, spareY: image.height - cropHeight)
            return try image.derive("extract_area") {
                cvips_extract_area($0, $1, Int32(origin.x), Int32(origin.y), Int32(cropWidth), Int32(cropHeight))
            }
        }
    }

    /// libvips' find_trim flattens alpha onto the background and compares colour bands only.
    private func trim(_ image: VipsImageHandle, threshold: Double, background: Colour?) throws(VipsError) -> VipsImageHandle {
        let colourBands = image.colourBands
        var values: [Double]
        if let background {
            values = image.values(of: background, bands: colourBands)
        } else {
            var vector: UnsafeMutablePointer<Double>?
            var count: Int32 = 0
            guard cvips_getpoint(image.pointer, &vector, &count, 0, 0) == 0, let vector else { throw VipsError.capture("getpoint") }
            values = Array(UnsafeBufferPointer(start: vector, count: min(Int(count), colourBands)))
            g_free(vector)
        }
        var box: (left: Int32, top: Int32, width: Int32, height: Int32) = (0, 0, 0, 0)
        let status = values.withUnsafeBufferPointer {
            cvips_find_trim(image.pointer, &box.left, &box.top, &box.width, &box.height, threshold, $0.baseAddress, Int32($0.count))
        }
        guard status == 0 else { throw VipsError.capture("find_trim") }
        // Nothing but background: keep the image rather than fail or make it empty.
        guard box.width > 0, box.height > 0 else { return image }
        return try image.derive("extract_area") { cvips_extract_area($0, $1, box.left, box.top, box.width, box.height) }
    }
}
