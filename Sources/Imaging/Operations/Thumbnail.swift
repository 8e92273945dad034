internal import CVips
import Model
import Keys

/// Resize to fit a box, decoding at reduced size where the format allows (shrink-on-load): as a
/// chain's first step it replaces the decode (`load`); anywhere else it runs through `apply` like any op.
package struct Thumbnail: ImageOperation {
    package static let name = "thumbnail"
    package static let summary = "Resize with shrink-on-load (sharp's fit). With one side given only inside is allowed."
    package static let width = Key.integer("width", .pixels(.side), .optional(), "Box width in pixels.")
    package static let height = Key.integer("height", .pixels(.side), .optional(), "Box height in pixels.")
    package static let fit = Key.choice("fit", .defaults(Fit.cover),
        "cover fills the box and crops at position; contain fits inside and pads to the box; fill stretches to the box; inside fits inside; outside covers the box without cropping.")
    package static let position = Key.choice("position", .defaults(Position.centre), "Where cover crops; attention and entropy pick by content.")
    package static let enlarge = Key.flag("enlarge", default: false, "Allow the image to grow.")
    package static let background = Key.colour("background", .defaults(.black), "Padding colour, for contain.")
    package static let keys: [any KeyDeclaration] = [width, height, fit, position, enlarge, background]
    package static let rules: [KeyRule] = [.atLeastOne(width, height)]

    package enum Fit: String, CaseIterable, Sendable { case cover, contain, fill, inside, outside }
    package enum Position: String, CaseIterable, Sendable { case centre, attention, entropy }

    package let width: Int?
    package let height: Int?
    package let fit: Fit
    package let position: Position
    package let enlarge: Bool
    package let background: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        width = try parameters.optional(Self.width)
        height = try parameters.optional(Self.height)
        fit = try parameters.read(Self.fit)
        position = try parameters.read(Self.position)
        enlarge = try parameters.read(Self.enlarge)
        background = try parameters.read(Self.background)
        // With one side given, every fit means the same thing: scale to that side.
        if (width == nil || height == nil) && fit != .inside {
            let given = width == nil ? "height" : "width"
            throw parameters.error(Self.fit, (parameters.has(Self.fit) ? "\(fit.rawValue)" : "the default fit \(fit.rawValue)")
                + " needs both width and height; with only \(given), give \"fit\": \"inside\"")
        }
    }

    /// Fits inside `width` x `height` without enlarging (the derived values' own decode); without a
    /// height, a width of a block of `widths`, whose identifier is that of
    /// `{"op": "thumbnail", "width": width, "fit": "inside"}`.
    package init(inside width: Int, _ height: Int? = nil) {
        (self.width, self.height, fit, position, enlarge, background) = (width, height, .inside, .centre, false, .black)
    }

    package var identifier: String {
        var parameters = [("width", width.map(String.init) ?? "auto"), ("height", height.map(String.init) ?? "auto"),
                          ("fit", fit.rawValue)]
        if fit == .cover { parameters.append(("position", position.rawValue)) }
        if fit == .contain { parameters.append(("background", background.canonical)) }
        parameters.append(("enlarge", String(enlarge)))
        return canonicalIdentifier(Self.name, parameters)
    }

    /// The box and options handed to libvips' thumbnail for an image of `sourceWidth` x `sourceHeight`
    /// (already in display orientation).
    private func request(sourceWidth: Int, sourceHeight: Int) -> (width: Int32, height: Int32, size: VipsSize, crop: VipsInteresting) {
        let unbounded = Int32(CVIPS_MAX_COORD)
        let size = enlarge ? VIPS_SIZE_BOTH : VIPS_SIZE_DOWN
        let (boxWidth, boxHeight) = (width.map(Int32.init) ?? unbounded, height.map(Int32.init) ?? unbounded)
        switch fit {
        case .inside, .contain: return (boxWidth, boxHeight, size, VIPS_INTERESTING_NONE)
        case .fill:
            // Stretch to the box, unless that would enlarge an image the job said not to.
            let shrinksOnly = Int(boxWidth) <= sourceWidth && Int(boxHeight) <= sourceHeight
            return (boxWidth, boxHeight, enlarge || shrinksOnly ? VIPS_SIZE_FORCE : size, VIPS_INTERESTING_NONE)
        case .cover: return (boxWidth, boxHeight, size, VipsInteresting(rawValue: vipsEnum(vips_interesting_get_type(), position.rawValue)))
        case .outside:
            // Scale by the larger ratio: pin the side that needs the most scaling, free the other.
            let widthRatio = Double(boxWidth) / Double(max(sourceWidth, 1))
            let heightRatio = Double(boxHeight) / Double(max(sourceHeight, 1))
            return widthRatio >= heightRatio
                ? (boxWidth, unbounded, size, VIPS_INTERESTING_NONE)
                : (unbounded, boxHeight, size, VIPS_INTERESTING_NONE)
        }
    }

    package func load(_ source: VipsSourceHandle, header: ImageHeader, settings: DecodeSettings) throws(VipsError) -> VipsImageHandle {
        let box = request(sourceWidth: header.displayWidth(autorotate: settings.autorotate),
                          sourceHeight: header.displayHeight(autorotate: settings.autorotate))
        var output: UnsafeMutablePointer<VipsImage>?
        // Colour-manage inside thumbnail, at the reduced size, only when the source needs it
        // (with colorspace "keep", only CMYK, which no output stores).
        let converts = settings.colourSpace == .srgb || header.interpretation == VIPS_INTERPRETATION_CMYK
        let exportProfile: String? = header.needsColourTransform && converts ? "srgb" : nil
        let status = cvips_thumbnail_source(source.pointer, &output, box.width, box.height, box.size, box.crop,
                                            settings.autorotate ? 0 : 1, settings.failOn.vipsValue,
                                            "fail_on=\(settings.failOn.rawValue)", exportProfile)
        guard status == 0, let output else { throw VipsError.capture("thumbnail") }
        return try letterbox(VipsImageHandle(taking: output, retaining: nil))
    }

    /// Whether what `load` returns is the whole frame, scaled, aspect kept (nothing cropped, padded
    /// or stretched), so smaller outputs can be derived from it.
    package var loadsWholeFrame: Bool { fit == .inside || fit == .outside }

    /// The size of the whole frame the source of `sourceWidth` x `sourceHeight` (display orientation) is
    /// scaled to before any crop or padding: another output may start from an image at least this large.

    package func scaledFrame(width sourceWidth: Int, height sourceHeight: Int) -> (width: Int, height: Int) {
        let widthRatio = width.map { Double($0) / Double(max(sourceWidth, 1)) }
        let heightRatio = height.map { Double($0) / Double(max(sourceHeight, 1)) }
        let ratios = [widthRatio, heightRatio].compactMap { $0 }
        var scale: Double = switch fit {
        case .inside, .contain: ratios.min() ?? 1
        case .cover, .outside: ratios.max() ?? 1
        case .fill: max(widthRatio ?? 1, heightRatio ?? 1)  // stretching needs each side at least its box
        }
        if !enlarge { scale = min(scale, 1) }
        return (Int((Double(sourceWidth) * scale).rounded(.up)), Int((Double(sourceHeight) * scale).rounded(.up)))
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let box = request(sourceWidth: image.width, sourceHeight: image.height)
        return try letterbox(image.derive("thumbnail") { cvips_thumbnail_image($0, $1, box.width, box.height, box.size, box.crop) })
    }

    /// `contain` pads the fitted image to exactly the box, centred, with the background colour
    /// (a translucent one gives the image alpha).
    private func letterbox(_ image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        guard fit == .contain, let width, let height, image.width != width || image.height != height else { return image }
        return try image.embedded(x: (width - image.width) / 2, y: (height - image.height) / 2,
                                  width: width, height: height, background: background)
    }
}
