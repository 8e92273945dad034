import Foundation

/// IPTC-IIM records cut down to the datasets a set names (record 2, the application record).
/// A JPEG carries them inside a Photoshop resource block (APP13), a TIFF bare; libvips loads
/// either as `iptc-data` and saves the bytes as they are, so they are rewritten in the form the
/// output's saver needs. Every other Photoshop resource (thumbnails, paths, digests) is dropped.
package enum IPTCRecords {
    private static let photoshopHeader = Array("Photoshop 3.0\u{0}".utf8)
    private static let resourceSignature = Array("8BIM".utf8)
    private static let iptcResource: UInt16 = 0x0404

    /// The kept datasets in `container`'s form; nil when none is left or the block does not parse.
    package static func keeping(_ datasets: Set<UInt8>, of data: Data, as container: IPTCContainer) -> Data? {
        guard !datasets.isEmpty, let records = records(in: [UInt8](data)) else { return nil }
        var kept: [UInt8] = []
        var envelope: [UInt8] = []
        for record in records {
            // The record version and the character set say how to read the rest; kept with it.
            if record.number == 2 && record.dataset == 0 || record.number == 1 && record.dataset == 90 {
                envelope += record.bytes
            } else if record.number == 2 && datasets.contains(record.dataset) {
                kept += record.bytes
            }
        }
        guard !kept.isEmpty else { return nil }
        let iim = envelope + kept
        switch container {
        case .records:
            // tiffsave passes libtiff the length in 32-bit words (libtiff 3's type for the tag), and
            // libtiff 4 writes that many bytes: a quarter of the records. Three times as many zeros
            // after them make the quarter exactly the records (checked with exiftool in the tests).
            return Data(iim + [UInt8](repeating: 0, count: 3 * iim.count))
        case .photoshop:
            let size = UInt32(iim.count)
            var block = photoshopHeader + resourceSignature + [UInt8(iptcResource >> 8), UInt8(iptcResource & 0xFF), 0, 0]
            block += (0..<4).reversed().map { UInt8(truncatingIfNeeded: size >> (8 * $0)) } + iim
            return Data(iim.count % 2 == 0 ? block : block + [0])
        }
    }

    /// A Photoshop block without its thumbnail resources (1033, 1036: a JPEG of the source as it
    /// was), every other resource as it is (up to the first that does not parse); bare records unchanged.
    package static func removingThumbnails(of data: Data) -> Data {
        let bytes = [UInt8](data)
        guard bytes.starts(with: photoshopHeader) else { return data }
        var kept = photoshopHeader
        var removed = false
        forEachResource(in: bytes[photoshopHeader.count...]) { id, whole, _ in
            if thumbnailResources.contains(id) { removed = true } else { kept += whole }
        }
        return removed ? Data(kept) : data
    }

    private static let thumbnailResources: Set<UInt16> = [0x0409, 0x040C]

    struct Record {
        let number: UInt8
        let dataset: UInt8
        let bytes: ArraySlice<UInt8>
    }

    /// The records of bare IIM bytes, or of the IPTC resource inside a Photoshop block.
    static func records(in bytes: [UInt8]) -> [Record]? {
        guard bytes.starts(with: photoshopHeader) else { return records(inIIM: bytes[...]) }
        var iim: ArraySlice<UInt8>?
        forEachResource(in: bytes[photoshopHeader.count...]) { id, _, data in if id == iptcResource && iim == nil { iim = data } }
        return iim.flatMap(records(inIIM:))
    }

    private static func records(inIIM bytes: ArraySlice<UInt8>) -> [Record]? {
        var records: [Record] = []
        var offset = bytes.startIndex
        while offset + 5 <= bytes.endIndex, bytes[offset] == 0x1C {
            let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            // An extended length (high bit set) is for datasets over 32 KiB: none of the text fields kept.
            guard length & 0x8000 == 0, offset + 5 + length <= bytes.endIndex else { return nil }
            records.append(Record(number: bytes[offset + 1], dataset: bytes[offset + 2], bytes: bytes[offset..<offset + 5 + length]))
            offset += 5 + length
        }
        return records
    }

    /// Calls `body` with each resource's id, its whole bytes (padding included) and its data, in
    /// order, up to the first that is not a whole resource.
    private static func forEachResource(in bytes: ArraySlice<UInt8>, _ body: (UInt16, ArraySlice<UInt8>, ArraySlice<UInt8>) -> Void) {
        var offset = bytes.startIndex
        while offset + 8 <= bytes.endIndex, bytes[offset..<offset + 4].elementsEqual(resourceSignature) {
            let id = UInt16(bytes[offset + 4]) << 8 | UInt16(bytes[offset + 5])
            let nameLength = Int(bytes[offset + 6])
            let sizeAt = offset + 6 + (nameLength + 2) & ~1  // a Pascal string padded to an even length
            guard sizeAt + 4 <= bytes.endIndex else { return }
            let size = bytes[sizeAt..<sizeAt + 4].reduce(0) { $0 << 8 | Int($1) }
            let start = sizeAt + 4
            guard start + size <= bytes.endIndex else { return }
            let end = min(start + size + size % 2, bytes.endIndex)
            body(id, bytes[offset..<end], bytes[start..<start + size])
            offset = end
        }
    }
}
