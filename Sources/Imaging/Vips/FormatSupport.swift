internal import CVips

/// Whether this libvips reads and writes a format a user may ask about (`runner formats`): which
/// loaders and savers a libvips has depends on how it was built, and for HEIC and AVIF on which
/// codecs libheif has, so those two are checked by saving a small image and reading it back.
package struct FormatSupport: Sendable, Equatable {
    package let name: String
    package let reads: Bool
    package let writes: Bool
    /// Its loader is one libvips marks untrusted: runner reads it only with `limits.blockUntrusted` false.
    package let untrusted: Bool
    /// runner's output `type` that writes it, if any (`auto` writes the others as JPEG or PNG).
    package let outputType: String?

    /// Every format of the list, in its order. libvips must be started.
    package static func survey() -> [FormatSupport] {
        func format(_ name: String, _ loader: String, _ saver: String?, _ type: String?) -> FormatSupport {
            FormatSupport(name: name, reads: cvips_operation_exists(loader) != 0,
                          writes: saver.map { cvips_operation_exists($0) != 0 } ?? false,
                          untrusted: cvips_operation_untrusted(loader) != 0, outputType: type)
        }
        func heif(_ name: String, _ compression: VipsForeignHeifCompression, _ type: String?) -> FormatSupport {
            let works = cvips_operation_exists("heifload") != 0 && cvips_heif_round_trips(compression) != 0
            return FormatSupport(name: name, reads: works, writes: works, untrusted: cvips_operation_untrusted("heifload") != 0,
                                 outputType: type)
        }
        return [
            format("JPEG", "jpegload", "jpegsave", "jpeg"), format("PNG", "pngload", "pngsave", "png"),
            format("WebP", "webpload", "webpsave", "webp"), format("GIF", "gifload", "gifsave", "gif"),
            format("TIFF", "tiffload", "tiffsave", "tiff"),
            heif("HEIC", VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, nil), heif("AVIF", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, "avif"),
            format("JPEG XL", "jxlload", "jxlsave", "jxl"), format("SVG", "svgload", nil, nil), format("PDF", "pdfload", nil, nil),
        ]
    }
}
