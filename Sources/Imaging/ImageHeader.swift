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
    /// The format libvips read the file as, named after its loader (`jpeg`, `png`, `svg`, `jxl`,
    /// `heif`; `avif` for AV1-coded HEIF), for the manifest.
    package let formatName: String

    package init(_ image: VipsImageHandle) {
        (width, height, orientation, interpretation) = (image.width, image.height, image.orientation, image.interpretation)
        unusableProfileBytes = image.unusableICCProfileBytes
        hasICCProfile = image.hasICCProfile && unusableProfileBytes == nil
        pages = max(image.int("n-pages") ?? 1, 1)
        let loader = image.string("vips-loader") ?? ""
        format = SourceFormat(loader: loader, heifCompression: image.string("heif-compression"))
        let named = loader.prefix { $0 != "_" }
        formatName = format == .avif ? "avif" : String(named.hasSuffix("load") ? named.dropLast(4) : named)
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
        let formats: [Substring: SourceFormat] = ["jpegload": .jpeg, "pngload": .png, "webpload": .webp, "gifload": .gif, "tiffload": .tiff,
                                                  "heifload": heifCompression == "av1" ? .avif : .other]
        self = formats[loader.prefix { $0 != "_" }] ?? .other
    }
}

extension ImageHeader {
    /// About what decoding this source costs to make a thumbnail whose whole frame is `frame`
    /// (`displayWidth` wide), in pixels scaled from a frame in memory (what the other way costs).
    /// Shrink-on-load decodes a JPEG by a power of two up to 8 that leaves at least a 2x final
    /// resample (libvips' `vips_thumbnail_find_jpegshrink`), but entropy-decodes the whole file
    /// at any shrink: measured on 14-20 MP photos, about a sixth of a scaled pixel's cost per source
    /// pixel (a 320 px thumbnail of a 5682x3260 JPEG: 31 ms decoded at 1/8, 22 ms scaled from a
    /// 1920 px frame). WebP and HEIF decode at any scale, to about twice the frame; other formats
    /// in full.
    package func decodeCost(toMake frame: (width: Int, height: Int), displayWidth: Int) -> Int {
        let full = width * height
        switch format {
        case .jpeg:
            let shrink = Double(displayWidth) / Double(max(frame.width, 1))
            let factor = shrink >= 16 ? 8 : shrink >= 8 ? 4 : shrink >= 4 ? 2 : 1
            return full / (factor * factor) + full / 6
        case .webp, .avif: return min(full, 4 * frame.width * frame.height)
        case .png, .gif, .tiff, .other: return full
        }
    }
}

extension FailOn {
    package var vipsValue: VipsFailOn { VipsFailOn(rawValue: vipsEnum(vips_fail_on_get_type(), rawValue)) }
}
