package import CVips
import Keys

package struct Resize: ImageOperation {
    package static let name = "resize"
    package static let summary = "Resample the decoded image (libvips resize, no shrink-on-load: use thumbnail as a first step for speed) with sharp's fit. With one side given the other follows the aspect ratio, whatever fit says. Without enlarge no side grows."
    package static let fit = Key.choice("fit", .defaults(Thumbnail.Fit.cover),
        "cover fills the box and crops at position; contain fits inside and pads at position; fill stretches; inside fits inside; outside covers without cropping.")
    package static let position = Key.choice("position", .defaults(Crop.Gravity.centre),
                                     "Where cover crops and contain pads; attention and entropy with cover only.")
    package static let enlarge = Key.flag("enlarge", default: false, "Allow sides to grow.")
    package static let kernel = Key.choice("kernel", .defaults(Kernel.lanczos3), "The resampling kernel.")
    // The box and its padding are read as thumbnail reads them.
    package static let keys: [any KeyDeclaration] = [Thumbnail.width, Thumbnail.height, fit, position, enlarge, kernel, Thumbnail.background]
    package static let rules: [KeyRule] = [.atLeastOne(Thumbnail.width, Thumbnail.height)]

    package enum Kernel: String, CaseIterable, Sendable {
        case nearest, linear, cubic, lanczos3

        package var vipsKernel: VipsKernel { VipsKernel(rawValue: vipsEnum(vips_kernel_get_type(), rawValue)) }
    }

    package let width: Int?
    package let height: Int?
    package let fit: Thumbnail.Fit
    package let position: Crop.Gravity
    package let enlarge: Bool
    package let kernel: Kernel
    package let background: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        width = try parameters.optional(Thumbnail.width)
        height = try parameters.optional(Thumbnail.height)
        let fit = try parameters.read(Self.fit)
        // With one side given every fit means the same thing: scale to that side.
        self.fit = width == nil || height == nil ? .inside : fit
        position = try parameters.read(Self.position)
        enlarge = try parameters.read(Self.enlarge)
        kernel = try parameters.read(Self.kernel)
        background = try parameters.read(Thumbnail.background)
        if position.isSmart && self.fit != .cover {
            throw parameters.error(Self.position, "\(position.rawValue) needs fit cover")
        }
    }

    package var identifier: String {
        var parameters = [("width", width.map(String.init) ?? "auto"), ("height", height.map(String.init) ?? "auto"),
                          ("fit", fit.rawValue)]
        if fit == .cover || fit == .contain { parameters.append(("position", position.rawValue)) }
        if fit == .contain { parameters.append(("background", background.canonical)) }
        parameters += [("enlarge", String(enlarge)), ("kernel", kernel.rawValue)]
        return canonicalIdentifier(Self.name, parameters)
    }

    package var needsRandomAccess: Bool { fit == .cover && position.isSmart }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let (sourceWidth, sourceHeight) = (Double(image.width), Double(image.height))
        let (boxWidth, boxHeight) = (width.map(Double.init), height.map(Double.init))
        let limit = enlarge ? Double.infinity : 1
        var horizontal: Double, vertical: Double
        switch fit {
        case .fill:
            (horizontal, vertical) = (min(boxWidth! / sourceWidth, limit), min(boxHeight! / sourceHeight, limit))
        case .inside, .contain:
            let scale = min(boxWidth.map { $0 / sourceWidth } ?? .infinity, boxHeight.map { $0 / sourceHeight } ?? .infinity, limit)
            (horizontal, vertical) = (scale, scale)
        case .cover, .outside:
            let scale = min(max(boxWidth! / sourceWidth, boxHeight! / sourceHeight), limit)
            (horizontal, vertical) = (scale, scale)
        }
        // Whole target pixels, and scales that land on them exactly (as sharp does).
        let targetWidth = max(1, Int((sourceWidth * horizontal).rounded()))
        let targetHeight = max(1, Int((sourceHeight * vertical).rounded()))
        var resized = image
        if targetWidth != image.width || targetHeight != image.height {
            (horizontal, vertical) = (Double(targetWidth) / sourceWidth, Double(targetHeight) / sourceHeight)
            resized = try image.derive("resize") { cvips_resize($0, $1, horizontal, vertical, kernel.vipsKernel) }
        }
        switch fit {
        case .cover: return try Crop(width: width!, height: height!, gravity: position).apply(to: resized)
        case .contain:
            let (width, height) = (max(width!, resized.width), max(height!, resized.height))
            guard width != resized.width || height != resized.height else { return resized }
            let origin = position.origin(spareX: width - resized.width, spareY: height - resized.height)
            return try resized.embedded(x: origin.x, y: origin.y, width: width, height: height, background: background)
        case .fill, .inside, .outside: return resized
        }
    }
}
