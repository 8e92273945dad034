/// Recognizes image files by their first bytes, so an error page served with 200 (or any other
/// non-image body) is never cached or decoded, whatever its Content-Type says.
enum ImageSignature {
    static let prefixLength = 16

    static func looksLikeImage(_ head: [UInt8]) -> Bool {
        func starts(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + bytes.count && Array(head[offset..<offset + bytes.count]) == bytes
        }
        return starts([0xFF, 0xD8, 0xFF])                                  // JPEG
            || starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])  // PNG
            || starts(Array("GIF8".utf8))                                 // GIF
            || (starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8))
            || starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A])  // TIFF
            || starts(Array("ftyp".utf8), at: 4)                          // HEIF, AVIF
            || starts([0xFF, 0x0A]) || starts([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20])  // JPEG XL
    }
}
