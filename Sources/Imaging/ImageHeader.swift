package import CVips
import Model

/// What the file's header says, read before any pixel is decoded.
package struct ImageHeader {
    package let width: Int
    package let height: Int
    package let orientation: Int
    /// A profile libvips can use; an unusable one counts as absent (sRGB assumed), as in browsers.
    package let hasICCProfile: Bool
    /// The size of an embedded profile libvips cannot use; nil when there is none or it is usable.
    package let unusableProfileBytes: Int?
    package let interpretation: VipsInterpretation
    /// Frames in the file (GIF, WebP, multi-page TIFF or HEIF); 1 for everything else.
    package let pages: Int
    package let format: SourceFormat

    package init(_ image: VipsImageHandle) {
        width = image.width
        height = image.height
        orientation = image.orientation
        unusableProfileBytes = image.unusableICCProfileBytes
        hasICCProfile = image.hasICCProfile && unusableProfileBytes == nil
        interpretation = image.interpretation
        pages = max(image.int("n-pages") ?? 1, 1)
        format = SourceFormat(loader: image.string("vips-loader") ?? "", heifCompression: image.string("heif-compression"))
    }

    /// Orientations 5-8 swap width and height when applied.
    package func displayWidth(autorotate: Bool) -> Int { autorotate && orientation >= 5 ? height : width }
    package func displayHeight(autorotate: Bool) -> Int { autorotate && orientation >= 5 ? width : height }

    /// What every item of this source should say though it renders.
    package var warning: String? {
        unusableProfileBytes.map { "ignored the embedded ICC profile (\($0) bytes): it is damaged or not for these pixels; colours taken as sRGB" }
    }

    /// An embedded profile or CMYK pixels: converting to sRGB takes real work.
    package var needsColourTransform: Bool { hasICCProfile || interpretation == VIPS_INTERPRETATION_CMYK }
}

/// The source's file format, as far as `"type": "auto"` cares.
package enum SourceFormat: Sendable, Equatable {
    case jpeg, png, webp, gif, tiff, avif, other

    /// From the loader libvips picked (`jpegload_buffer`, ...); HEIF files are AVIF when AV1-compressed.
    package init(loader: String, heifCompression: String?) {
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
    package var vipsValue: VipsFailOn {
        switch self {
        case .none: VIPS_FAIL_ON_NONE
        case .truncated: VIPS_FAIL_ON_TRUNCATED
        case .error: VIPS_FAIL_ON_ERROR
        case .warning: VIPS_FAIL_ON_WARNING
        }
    }
}
