internal import CVips

/// What the file's header says, read before any pixel is decoded.
struct ImageHeader {
    let width: Int
    let height: Int
    let orientation: Int
    let hasICCProfile: Bool
    let interpretation: VipsInterpretation
    /// Frames in the file (GIF, WebP, multi-page TIFF or HEIF); 1 for everything else.
    let pages: Int
    let format: SourceFormat

    init(_ image: VipsImageHandle) {
        width = image.width
        height = image.height
        orientation = image.orientation
        hasICCProfile = image.hasICCProfile
        interpretation = image.interpretation
        pages = max(image.int("n-pages") ?? 1, 1)
        format = SourceFormat(loader: image.string("vips-loader") ?? "", heifCompression: image.string("heif-compression"))
    }

    /// Orientations 5-8 swap width and height when applied.
    func displayWidth(autorotate: Bool) -> Int { autorotate && orientation >= 5 ? height : width }
    func displayHeight(autorotate: Bool) -> Int { autorotate && orientation >= 5 ? width : height }

    /// An embedded profile or CMYK pixels: converting to sRGB takes real work.
    var needsColourTransform: Bool { hasICCProfile || interpretation == VIPS_INTERPRETATION_CMYK }
}

/// The source's file format, as far as `"type": "auto"` cares.
enum SourceFormat: Sendable, Equatable {
    case jpeg, png, webp, gif, tiff, avif, other

    /// From the loader libvips picked (`jpegload_buffer`, ...); HEIF files are AVIF when AV1-compressed.
    init(loader: String, heifCompression: String?) {
        switch loader.prefix(while: { $0 != "_" }) {
        case "jpegload": self = .jpeg
        case "pngload": self = .png
        case "webpload": self = .webp
        case "gifload": self = .gif
        case "tiffload": self = .tiff
        case "heifload": self = heifCompression == "av1" ? .avif : .other
        default: self = .other
        }
    }
}

extension FailOn {
    var vipsValue: VipsFailOn {
        switch self {
        case .none: VIPS_FAIL_ON_NONE
        case .truncated: VIPS_FAIL_ON_TRUNCATED
        case .error: VIPS_FAIL_ON_ERROR
        case .warning: VIPS_FAIL_ON_WARNING
        }
    }
}
