import Foundation

/// Recognizes image files by their first bytes, so an error page served with 200 (or any other
/// non-image body) is never cached or decoded, whatever its Content-Type says.
package enum ImageSignature {
    package static let prefixLength = 16

    /// Each format by its IANA media type (a manifest's output `type`, for `<source type=...>`).
    package enum Format: String {
        case jpeg = "image/jpeg", png = "image/png", gif = "image/gif", webp = "image/webp", tiff = "image/tiff", avif = "image/avif"
        case heif = "image/heif", jpegXL = "image/jxl"
        /// Read only by loaders libvips marks untrusted (or by ImageMagick): a body of one is an
        /// image, so it reaches a worker, which reads it or says that `limits.blockUntrusted` blocks it.
        case netpbm = "image/x-portable-anymap", bmp = "image/bmp", pdf = "application/pdf", xcf = "image/x-xcf"
        case psd = "image/vnd.adobe.photoshop", jpeg2000 = "image/jp2", openEXR = "image/x-exr", radiance = "image/vnd.radiance"
        case fits = "image/fits"

        /// Formats every current browser shows in an `<img>` (a report shows these sources as they are).
        package var displaysInBrowsers: Bool {
            switch self {
            case .jpeg, .png, .gif, .webp, .avif, .bmp: true
            case .tiff, .heif, .jpegXL, .netpbm, .pdf, .xcf, .psd, .jpeg2000, .openEXR, .radiance, .fits: false
            }
        }

        package var mediaType: String { rawValue }
    }

    package static func format(_ head: [UInt8]) -> Format? {
        func starts(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + bytes.count && Array(head[offset..<offset + bytes.count]) == bytes
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF8".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        // ISO BMFF: the major brand says AV1 (AVIF) or another HEIF coding (HEIC, which browsers lack).
        if starts(Array("ftyp".utf8), at: 4) { return starts(Array("avif".utf8), at: 8) || starts(Array("avis".utf8), at: 8) ? .avif : .heif }
        if starts([0xFF, 0x0A]) || starts([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20]) { return .jpegXL }
        // Netpbm: P1-P7, PF, Pf, then whitespace. SVG is left out: its text opening is an XML error page's too.
        if head.count >= 3, head[0] == UInt8(ascii: "P"), Array("1234567Ff".utf8).contains(head[1]),
           [0x20, 0x09, 0x0A, 0x0D].contains(head[2]) { return .netpbm }
        if starts(Array("BM".utf8)) && head.count >= 14 && head[6...9].allSatisfy({ $0 == 0 }) { return .bmp }
        if starts(Array("%PDF-".utf8)) { return .pdf }
        if starts(Array("gimp xcf".utf8)) { return .xcf }
        if starts(Array("8BPS".utf8)) { return .psd }
        if starts([0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) || starts([0xFF, 0x4F, 0xFF, 0x51]) { return .jpeg2000 }
        if starts([0x76, 0x2F, 0x31, 0x01]) { return .openEXR }
        if starts(Array("#?RADIANCE".utf8)) || starts(Array("#?RGBE".utf8)) { return .radiance }
        if starts(Array("SIMPLE  =".utf8)) { return .fits }
        return nil
    }

    /// The format of the file at `path` by its first bytes; nil when it is unreadable or no image.
    package static func format(ofFile path: String) -> Format? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return format(Array((try? handle.read(upToCount: prefixLength)) ?? Data()))
    }
}
