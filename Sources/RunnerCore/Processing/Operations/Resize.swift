internal import CVips

/// Resample the decoded image (libvips `resize`, no shrink-on-load), then crop or pad as `fit`
/// says. `fit` follows sharp: cover fills the box and crops at `position`, contain fits inside
/// and pads at `position`, fill stretches, inside fits within, outside covers without cropping.
struct Resize: ImageOperation {
    static let name = "resize"
    static let keys = ["width", "height", "fit", "position", "enlarge", "kernel", "background"]

    enum Kernel: String, CaseIterable, Sendable {
        case nearest, linear, cubic, lanczos3

        var vipsKernel: VipsKernel {
            switch self {
            case .nearest: VIPS_KERNEL_NEAREST
            case .linear: VIPS_KERNEL_LINEAR
            case .cubic: VIPS_KERNEL_CUBIC
            case .lanczos3: VIPS_KERNEL_LANCZOS3
            }
        }
    }

    let width: Int?
    let height: Int?
    let fit: Thumbnail.Fit
    let position: Crop.Gravity
    let enlarge: Bool
    let kernel: Kernel
    let background: Colour

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        width = try parameters.optionalInt("width", .positive)
        height = try parameters.optionalInt("height", .positive)
        guard width != nil || height != nil else { throw parameters.error("width", "width or height is required") }
        let fit = try parameters.choice("fit", default: Thumbnail.Fit.cover)
        // With one side given every fit means the same thing: scale to that side.
        self.fit = width == nil || height == nil ? .inside : fit
        position = try parameters.choice("position", default: .centre)
        enlarge = try parameters.bool("enlarge", default: false)
        kernel = try parameters.choice("kernel", default: .lanczos3)
        background = try parameters.colour("background", default: .black)
        if position.isSmart && self.fit != .cover {
            throw parameters.error("position", "\(position.rawValue) needs fit cover")
        }
    }

    var identifier: String {
        var parameters = [("width", width.map(String.init) ?? "auto"), ("height", height.map(String.init) ?? "auto"),
                          ("fit", fit.rawValue)]
        if fit == .cover || fit == .contain { parameters.append(("position", position.rawValue)) }
        if fit == .contain { parameters.append(("background", background.canonical)) }
        parameters += [("enlarge", String(enlarge)), ("kernel", kernel.rawValue)]
        return canonicalIdentifier(Self.name, parameters)
    }

    var needsRandomAccess: Bool { fit == .cover && position.isSmart }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let (sourceWidth, sourceHeight) = (Double(image.width), Double(image.height))
        let boxWidth = width.map(Double.init)
        let boxHeight = height.map(Double.init)
        let limit = enlarge ? Double.infinity : 1
        var horizontal: Double
        var vertical: Double
        switch fit {
        case .fill:
            horizontal = min(boxWidth! / sourceWidth, limit)
            vertical = min(boxHeight! / sourceHeight, limit)
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
            horizontal = Double(targetWidth) / sourceWidth
            vertical = Double(targetHeight) / sourceHeight
            resized = try image.derive("resize") { cvips_resize($0, $1, horizontal, vertical, kernel.vipsKernel) }
        }
        switch fit {
        case .cover:
            return try Crop(width: width!, height: height!, gravity: position).apply(to: resized)
        case .contain:
            let (width, height) = (max(width!, resized.width), max(height!, resized.height))
            guard width != resized.width || height != resized.height else { return resized }
            let origin = position.origin(spareX: width - resized.width, spareY: height - resized.height)
            return try resized.embedded(x: origin.x, y: origin.y, width: width, height: height, background: background)
        case .fill, .inside, .outside:
            return resized
        }
    }
}
