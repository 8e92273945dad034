import Foundation

/// The metadata a file carries, found by walking its own container (JPEG APP segments, PNG
/// chunks, RIFF chunks, GIF extensions, TIFF tags, HEIF boxes) rather than asking libvips, which
/// may not show everything a file holds.
public enum WrittenMetadata {
    public enum Block: String, Sendable, Hashable, CustomStringConvertible {
        case exif
        /// A GPS IFD, inside EXIF or among a TIFF's tags.
        case gps
        case xmp
        case icc
        /// IPTC or a Photoshop block.
        case iptc
        /// Comments and free-text fields (PNG text chunks, JPEG COM, GIF comments, TIFF Artist,
        /// Copyright, ImageDescription).
        case text

        public var description: String { rawValue }
    }

    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    public static func blocks(inFile path: String) throws -> Set<Block> {
        try blocks(in: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// Throws for a format it does not know or a structure it cannot follow, so a test never
    /// passes on a file it did not read.
    public static func blocks(in bytes: [UInt8]) throws -> Set<Block> {
        let file = Bytes(bytes)
        if file.starts(with: [0xFF, 0xD8]) { return try jpeg(file) }
        if file.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return try png(file) }
        if file.starts(with: Array("RIFF".utf8)) && file.has(Array("WEBP".utf8), at: 8) { return try webp(file) }
        if file.starts(with: Array("GIF8".utf8)) { return try gif(file) }
        if file.starts(with: [0x49, 0x49, 0x2A, 0x00]) || file.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return try tiff(file, at: 0) }
        if file.starts(with: [0xFF, 0x0A]) || file.has([0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A], at: 4) {
            return try jpegXL(file)
        }
        if file.has(Array("ftyp".utf8), at: 4) { return try heif(file) }
        throw Malformed(description: "not a JPEG, PNG, WebP, GIF, TIFF, JPEG XL or HEIF file")
    }

    // MARK: Formats

    private static func jpeg(_ file: Bytes) throws -> Set<Block> {
        var found: Set<Block> = []
        var offset = 2
        while true {
            guard try file.byte(offset) == 0xFF else { throw Malformed(description: "JPEG: no marker at \(offset)") }
            let marker = try file.byte(offset + 1)
            if marker == 0xDA || marker == 0xD9 { return found }  // start of scan: no more metadata
            let length = try file.u16(offset + 2, bigEndian: true)
            let payload = offset + 4
            switch marker {
            case 0xE1 where file.has(Array("Exif\0\0".utf8), at: payload):
                found.formUnion(try exif(file, tiffAt: payload + 6))
            case 0xE1 where file.has(Array("http://ns.adobe.com/xap/1.0/".utf8), at: payload): found.insert(.xmp)
            case 0xE2 where file.has(Array("ICC_PROFILE\0".utf8), at: payload): found.insert(.icc)
            case 0xED: found.insert(.iptc)
            case 0xFE: found.insert(.text)
            default: break
            }
            offset += 2 + length
        }
    }

    private static func png(_ file: Bytes) throws -> Set<Block> {
        var found: Set<Block> = []
        var offset = 8
        while offset < file.count {
            let length = try file.u32(offset, bigEndian: true)
            let type = try file.text(offset + 4, count: 4)
            let data = offset + 8
            switch type {
            case "eXIf": found.formUnion(try exif(file, tiffAt: data))
            case "iCCP": found.insert(.icc)
            case "tEXt", "zTXt", "iTXt": found.insert(file.has(Array("XML:com.adobe.xmp\0".utf8), at: data) ? .xmp : .text)
            case "IEND": return found
            default: break
            }
            offset = data + length + 4  // + CRC
        }
        throw Malformed(description: "PNG: no IEND")
    }

    private static func webp(_ file: Bytes) throws -> Set<Block> {
        var found: Set<Block> = []
        var offset = 12
        while offset < file.count {
            let type = try file.text(offset, count: 4)
            let length = try file.u32(offset + 4, bigEndian: false)
            switch type {
            case "EXIF": found.formUnion(try exif(file, tiffAt: offset + 8))
            case "XMP ": found.insert(.xmp)
            case "ICCP": found.insert(.icc)
            default: break
            }
            offset += 8 + length + length % 2
        }
        return found
    }

    private static func gif(_ file: Bytes) throws -> Set<Block> {
        var found: Set<Block> = []
        /// Past a chain of data sub-blocks (each a length byte, ending with 0).
        func skipSubBlocks(_ start: Int) throws -> Int {
            var offset = start
            while case let size = Int(try file.byte(offset)), size > 0 { offset += 1 + size }
            return offset + 1
        }
        let screenFlags = try file.byte(10)
        var offset = 13 + (screenFlags & 0x80 != 0 ? 3 << (Int(screenFlags & 7) + 1) : 0)
        while true {
            switch try file.byte(offset) {
            case 0x3B:
                return found
            case 0x21:
                let label = try file.byte(offset + 1)
                if label == 0xFE { found.insert(.text) }
                if label == 0xFF {
                    let application = try file.text(offset + 3, count: 11)
                    if application == "XMP DataXMP" { found.insert(.xmp) }
                    if application.hasPrefix("ICCRGBG1") { found.insert(.icc) }
                }
                offset = try skipSubBlocks(offset + 2)
            case 0x2C:
                let flags = try file.byte(offset + 9)
                offset += 10 + (flags & 0x80 != 0 ? 3 << (Int(flags & 7) + 1) : 0)
                offset = try skipSubBlocks(offset + 1)  // past the LZW minimum code size
            case let other:
                throw Malformed(description: "GIF: unknown block \(other) at \(offset)")
            }
        }
    }

    /// Every IFD of a TIFF file (all pages) or of an EXIF block, whose offsets count from `start`.
    private static func tiff(_ file: Bytes, at start: Int, isExif: Bool = false) throws -> Set<Block> {
        let bigEndian = try file.byte(start) == 0x4D
        var found: Set<Block> = isExif ? [.exif] : []
        var ifd = try file.u32(start + 4, bigEndian: bigEndian)
        var seen: Set<Int> = []
        while ifd != 0, seen.insert(ifd).inserted {
            let base = start + ifd
            let count = try file.u16(base, bigEndian: bigEndian)
            for index in 0..<count {
                switch try file.u16(base + 2 + 12 * index, bigEndian: bigEndian) {
                case 34665: found.insert(.exif)
                case 34853: found.insert(.gps)
                case 700: found.insert(.xmp)
                case 34675: found.insert(.icc)
                case 33723, 34377: found.insert(.iptc)
                case 270, 315, 33432: if !isExif { found.insert(.text) }
                default: break
                }
            }
            ifd = try file.u32(base + 2 + 12 * count, bigEndian: bigEndian)
        }
        return found
    }

    /// An EXIF block: a TIFF structure, in some containers behind JPEG's `Exif\0\0` prefix.
    private static func exif(_ file: Bytes, tiffAt start: Int) throws -> Set<Block> {
        try tiff(file, at: file.has(Array("Exif\0\0".utf8), at: start) ? start + 6 : start, isExif: true)
    }

    /// JPEG XL: a bare codestream holds no metadata box; the container's are `Exif` (a 4-byte offset,
    /// then the TIFF structure), `xml ` (XMP) and `brob` (either, Brotli-compressed, its type in its
    /// first 4 bytes: GPS is not told apart there). An ICC profile is a field of the codestream's
    /// header, not a box, and is not read here: libvips' decoder reports one for every JPEG XL file.
    private static func jpegXL(_ file: Bytes) throws -> Set<Block> {
        guard !file.starts(with: [0xFF, 0x0A]) else { return [] }
        var found: Set<Block> = []
        var offset = 0
        while offset < file.count {
            var size = try file.u32(offset, bigEndian: true)
            var header = 8
            if size == 1 { size = try file.u32(offset + 12, bigEndian: true); header = 16 }  // 64-bit size, small files
            if size == 0 { size = file.count - offset }
            guard size >= header else { throw Malformed(description: "JPEG XL: a box of \(size) bytes at \(offset)") }
            let body = offset + header
            switch (try file.text(offset + 4, count: 4), try? file.text(body, count: 4)) {
            case ("Exif", _): found.formUnion(try exif(file, tiffAt: body + 4 + (try file.u32(body, bigEndian: true))))
            case ("xml ", _), ("brob", "xml "): found.insert(.xmp)
            case ("brob", "Exif"): found.insert(.exif)
            case ("brob", let type): throw Malformed(description: "JPEG XL: a compressed \(type ?? "?") box")
            default: break
            }
            offset += size
        }
        return found
    }

    /// ISO BMFF: item types in `meta/iinf` (Exif, XMP as a MIME item) and `colr` boxes in
    /// `meta/iprp/ipco` that carry an ICC profile (`prof`, `rICC`; `nclx` is not a profile).
    /// The EXIF item's content lies in `mdat` and is not read: GPS is not told apart here.
    private static func heif(_ file: Bytes) throws -> Set<Block> {
        var found: Set<Block> = []
        func walk(_ start: Int, _ end: Int) throws {
            var offset = start
            while offset + 8 <= end {
                var size = try file.u32(offset, bigEndian: true)
                let type = try file.text(offset + 4, count: 4)
                var header = 8
                if size == 1 { size = try file.u32(offset + 12, bigEndian: true); header = 16 }  // 64-bit size, small files
                if size == 0 { size = end - offset }
                let body = offset + header
                switch type {
                case "meta": try walk(body + 4, offset + size)  // a full box: version and flags first
                case "iprp", "ipco": try walk(body, offset + size)
                case "iinf":
                    let version = try file.byte(body)
                    try walk(body + 4 + (version == 0 ? 2 : 4), offset + size)
                case "infe":
                    let version = try file.byte(body)
                    guard version >= 2 else { break }
                    let itemType = body + 4 + (version == 2 ? 2 : 4) + 2
                    switch try file.text(itemType, count: 4) {
                    case "Exif": found.insert(.exif)
                    case "mime" where file.contains(Array("application/rdf+xml".utf8), in: itemType + 4..<offset + size):
                        found.insert(.xmp)
                    default: break
                    }
                case "colr":
                    if ["prof", "rICC"].contains(try file.text(body, count: 4)) { found.insert(.icc) }
                default: break
                }
                offset += size
            }
        }
        try walk(0, file.count)
        return found
    }
}

/// Bounds-checked reads.
private struct Bytes {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var count: Int { bytes.count }

    func byte(_ offset: Int) throws -> UInt8 {
        guard offset >= 0, offset < bytes.count else { throw WrittenMetadata.Malformed(description: "read past the end at \(offset)") }
        return bytes[offset]
    }

    func u16(_ offset: Int, bigEndian: Bool) throws -> Int {
        let (a, b) = (Int(try byte(offset)), Int(try byte(offset + 1)))
        return bigEndian ? a << 8 | b : b << 8 | a
    }

    func u32(_ offset: Int, bigEndian: Bool) throws -> Int {
        let (high, low) = (try u16(offset, bigEndian: bigEndian), try u16(offset + 2, bigEndian: bigEndian))
        return bigEndian ? high << 16 | low : low << 16 | high
    }

    func text(_ offset: Int, count: Int) throws -> String {
        _ = try byte(offset + count - 1)
        return String(decoding: bytes[offset..<offset + count], as: UTF8.self)
    }

    func has(_ prefix: [UInt8], at offset: Int) -> Bool {
        offset >= 0 && offset + prefix.count <= bytes.count && bytes[offset..<offset + prefix.count].elementsEqual(prefix)
    }

    func starts(with prefix: [UInt8]) -> Bool { has(prefix, at: 0) }

    func contains(_ needle: [UInt8], in range: Range<Int>) -> Bool {
        range.contains { has(needle, at: $0) && $0 + needle.count <= range.upperBound }
    }
}

/// JPEG fixtures with hand-made metadata, built from another JPEG's bytes, so tests need no
/// binary fixture for each case.
public enum JPEGMetadata {
    /// `jpeg` with APP segments (marker, payload) inserted right after its start-of-image marker.
    public static func inserting(_ segments: [(marker: UInt8, payload: [UInt8])], into jpeg: [UInt8]) -> [UInt8] {
        var result = Array(jpeg[0..<2])
        for (marker, payload) in segments {
            let length = payload.count + 2
            result += [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        }
        return result + jpeg[2...]
    }

    public static let app1: UInt8 = 0xE1
    public static let app2: UInt8 = 0xE2

    /// An APP1 EXIF payload (big-endian TIFF): IFD0 with ImageDescription, Artist, Copyright and a
    /// GPS IFD holding a latitude and longitude.
    public static func exif(description: String, artist: String, copyright: String) -> [UInt8] {
        typealias Entry = (tag: UInt16, type: UInt16, count: UInt32, value: [UInt8])
        func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func be32(_ value: UInt32) -> [UInt8] { be16(UInt16(value >> 16)) + be16(UInt16(value & 0xFFFF)) }
        func ascii(_ tag: UInt16, _ text: String) -> Entry {
            let bytes = Array(text.utf8) + [0]
            return (tag, 2, UInt32(bytes.count), bytes)
        }
        func rationals(_ tag: UInt16, _ values: [UInt32]) -> Entry {
            (tag, 5, UInt32(values.count), values.flatMap { be32($0) + be32(1) })
        }
        /// An IFD at `offset` (from the TIFF header): entries, next-IFD 0, then values over 4 bytes.
        func ifd(_ entries: [Entry], at offset: Int) -> [UInt8] {
            var head = be16(UInt16(entries.count))
            var data: [UInt8] = []
            let dataStart = offset + 2 + 12 * entries.count + 4
            for entry in entries {
                head += be16(entry.tag) + be16(entry.type) + be32(entry.count)
                if entry.value.count <= 4 {
                    head += entry.value + [UInt8](repeating: 0, count: 4 - entry.value.count)
                } else {
                    head += be32(UInt32(dataStart + data.count))
                    data += entry.value + (entry.value.count % 2 == 1 ? [0] : [])
                }
            }
            return head + be32(0) + data
        }
        let texts = [ascii(0x010E, description), ascii(0x013B, artist), ascii(0x8298, copyright)]
        let ifd0Size = ifd(texts + [(0x8825, 4, 1, be32(0))], at: 8).count
        let ifd0 = ifd(texts + [(0x8825, 4, 1, be32(UInt32(8 + ifd0Size)))], at: 8)
        let gps = ifd([ascii(1, "N"), rationals(2, [43, 12, 30]), ascii(3, "W"), rationals(4, [4, 51, 0])], at: 8 + ifd0Size)
        return Array("Exif\0\0".utf8) + Array("MM".utf8) + [0, 0x2A] + be32(8) + ifd0 + gps
    }

    /// An APP1 XMP payload.
    public static func xmp(_ packet: String) -> [UInt8] { Array("http://ns.adobe.com/xap/1.0/\0".utf8) + Array(packet.utf8) }

    /// An APP2 payload holding `profile` as the only chunk of an ICC profile.
    public static func icc(_ profile: [UInt8]) -> [UInt8] { Array("ICC_PROFILE\0".utf8) + [1, 1] + profile }
}
