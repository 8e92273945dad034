import Foundation
import Testing
import TestSupport

/// Hostile images made from the fixtures' clean photographs, in memory, by the test itself: every
/// 1/16 truncation, bit flips from a fixed seed, and header fields set to extremes.
enum HostileCorpus {
    /// The clean originals, one per format runner reads and writes.
    static let originals = ["jpg": "formats/photo.jpg", "png": "formats/photo.png", "webp": "formats/photo.webp",
                            "gif": "formats/photo.gif", "tif": "formats/photo.tif", "avif": "formats/photo.avif"]

    /// File name → bytes, the originals included (as `EXT-original.EXT`).
    static func make(seed: UInt64 = 14) throws -> [String: [UInt8]] {
        var corpus: [String: [UInt8]] = [:]
        var random = FuzzRandom(seed: seed)
        for (ext, fixture) in originals.sorted(by: { $0.key < $1.key }) {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(fixture))))
            corpus["\(ext)-original.\(ext)"] = bytes
            for sixteenth in 1..<16 {
                corpus[String(format: "%@-cut%02d.%@", ext, sixteenth, ext)] = Array(bytes.prefix(bytes.count * sixteenth / 16))
            }
            for variant in 0..<8 {
                var flipped = bytes
                for _ in 0...(variant * 3) {
                    flipped[random.below(flipped.count)] ^= UInt8(1) << UInt8(random.below(8))
                }
                corpus["\(ext)-flip\(variant).\(ext)"] = flipped
            }
            for (name, extreme) in try extremes(ext, bytes) { corpus["\(ext)-\(name).\(ext)"] = extreme }
        }
        return corpus
    }

    /// The format's size fields set to the largest (and smallest) values they can hold.
    static func extremes(_ ext: String, _ bytes: [UInt8]) throws -> [String: [UInt8]] {
        var found: [String: [UInt8]] = [:]
        func patched(_ changes: [(offset: Int, value: [UInt8])]) -> [UInt8] {
            var copy = bytes
            for change in changes { copy.replaceSubrange(change.offset..<(change.offset + change.value.count), with: change.value) }
            return copy
        }
        switch ext {
        case "png":
            // IHDR: width and height at 16 and 20, its CRC (over type and data) at 29.
            for (name, width, height) in [("ihdr-wide", 0x7fff_ffff, 1), ("ihdr-tall", 1, 0x7fff_ffff),
                                          ("ihdr-huge", 0x7fff_ffff, 0x7fff_ffff), ("ihdr-zero", 0, 0)] {
                var png = patched([(16, bigEndian(width, 4)), (20, bigEndian(height, 4))])
                png.replaceSubrange(29..<33, with: bigEndian(Int(crc32(png[12..<29])), 4))
                found[name] = png
            }
        case "jpg":
            let sof = try #require(markerOffset(in: bytes, anyOf: [0xC0, 0xC1, 0xC2]), "the JPEG has a SOF marker")
            for (name, width, height) in [("sof-max", 65535, 65535), ("sof-wide", 65535, 1), ("sof-zero", 0, 0)] {
                found[name] = patched([(sof + 5, bigEndian(height, 2)), (sof + 7, bigEndian(width, 2))])
            }
        case "gif":
            found["screen-max"] = patched([(6, littleEndian(65535, 2)), (8, littleEndian(65535, 2))])
            found["screen-zero"] = patched([(6, littleEndian(0, 2)), (8, littleEndian(0, 2))])
            let descriptor = try #require(gifImageDescriptor(bytes), "the GIF has an image descriptor")
            found["frame-max"] = patched([(descriptor + 5, littleEndian(65535, 2)), (descriptor + 7, littleEndian(65535, 2))])
        case "tif":
            // ImageWidth (256) and ImageLength (257) as LONGs of 2^31 - 1.
            let ifd = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
            let count = Int(bytes[ifd]) | Int(bytes[ifd + 1]) << 8
            var changes: [(offset: Int, value: [UInt8])] = []
            for entry in 0..<count {
                let at = ifd + 2 + entry * 12
                let tag = Int(bytes[at]) | Int(bytes[at + 1]) << 8
                if tag == 256 || tag == 257 {
                    changes.append((at + 2, littleEndian(4, 2) + littleEndian(1, 4) + littleEndian(0x7fff_ffff, 4)))
                }
            }
            try #require(changes.count == 2, "the TIFF names its width and length")
            found["huge"] = patched(changes)
        case "webp":
            // VP8X: the canvas width and height, less one, in 24 bits each.
            try #require(Array(bytes[12..<16]) == Array("VP8X".utf8), "the WebP has a VP8X chunk")
            found["canvas-max"] = patched([(24, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])])
        case "avif":
            // `ispe`: the image's spatial extent (version and flags, then width and height).
            let ispe = try #require(range(of: Array("ispe".utf8), in: bytes), "the AVIF has an ispe box")
            found["ispe-huge"] = patched([(ispe + 8, bigEndian(0x7fff_ffff, 4) + bigEndian(0x7fff_ffff, 4))])
            found["ispe-zero"] = patched([(ispe + 8, bigEndian(0, 4) + bigEndian(0, 4))])
        default: break
        }
        return found
    }

    static func bigEndian(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }

    static func littleEndian(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func range(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        (0...(bytes.count - needle.count)).first { Array(bytes[$0..<($0 + needle.count)]) == needle }
    }

    /// The first JPEG marker segment of one of `kinds`, walking the segments from SOI.
    static func markerOffset(in bytes: [UInt8], anyOf kinds: Set<UInt8>) -> Int? {
        var at = 2
        while at + 4 < bytes.count, bytes[at] == 0xFF {
            if kinds.contains(bytes[at + 1]) { return at }
            at += 2 + (Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
        }
        return nil
    }

    /// The first image descriptor (0x2C) after the header, global colour table and extensions.
    static func gifImageDescriptor(_ bytes: [UInt8]) -> Int? {
        var at = 13 + (bytes[10] & 0x80 != 0 ? 3 << (Int(bytes[10] & 7) + 1) : 0)
        while at < bytes.count {
            switch bytes[at] {
            case 0x2C: return at
            case 0x21:
                at += 2
                while at < bytes.count, bytes[at] != 0 { at += Int(bytes[at]) + 1 }
                at += 1
            default: return nil
            }
        }
        return nil
    }
}

@Suite("Hostile images", .serialized)
struct HostileImageTests {
    @Test("truncated, bit-flipped and extreme-header JPEG, PNG, WebP, GIF, TIFF and AVIF files each fail only their own items with the decoder's message, or render whole; no partial or temporary file; the run exits 1 in bounded time")
    func hostileCorpus() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        let corpus = try HostileCorpus.make()
        for (name, bytes) in corpus { try Data(bytes).write(to: URL(fileURLWithPath: workspace.path("in/" + name))) }
        // A thumbnail (shrink-on-load) and a full decode of every file.
        let job = try workspace.writeJob("""
            {"version": 1, "name": "hostile", "sources": [{"path": "in", "include": ["*"]}],
             "outputs": [{"name": "t", "path": "out/t/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}},
                         {"name": "f", "path": "out/f/{stem}.png", "chain": [{"op": "flip", "direction": "horizontal"}], "format": {"type": "png"}}],
             "state": "state.sqlite"}
            """)
        let (result, seconds) = try workspace.runCounting([job, "--log-format", "json"])
        #expect(seconds < 60, "the run took \(seconds) s of CPU")
        #expect(result.status == 1, "exit \(result.status): \(result.stderr.suffix(2000))")

        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        let rows = try state.rows("SELECT key, state, error_kind, error_message, output_path FROM item")
        #expect(rows.count == corpus.count * 2, "every file was planned with both outputs")
        var kinds: [String: Int] = [:]
        for row in rows {
            let (key, itemState, kind, message, output) = (row[0], row[1], row[2], row[3], row[4])
            let name = (key as NSString).lastPathComponent
            switch itemState {
            case "done":
                #expect(ImageProbe.open(output) != nil, "\(name): recorded done, but \(output) does not decode whole")
                kinds["done", default: 0] += 1
            case "failed":
                kinds[kind, default: 0] += 1
                #expect(kind == "decode" || kind == "too-large", "\(name): \(kind): \(message)")
                // The decoder's own words, not an empty or generic placeholder.
                #expect(!message.isEmpty && !message.hasSuffix("load failed") && message != "decode failed", "\(name): \(kind): \(message)")
                // A cut-off TIFF is no reason to unblock ImageMagick.
                #expect(!message.hasPrefix("magickload: operation is blocked"), "\(name): \(kind): \(message)")
                #expect(!FileManager.default.fileExists(atPath: output), "\(name): failed, yet \(output) exists")
            default:
                Issue.record("\(name) ended \(itemState)")
            }
        }
        for name in corpus.keys where name.contains("-original.") {
            #expect(rows.filter { ($0[0] as NSString).lastPathComponent.hasPrefix(name + "@") }.allSatisfy { $0[1] == "done" },
                    "\(name) is a clean photograph")
        }
        #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")
        #expect(try state.integrity() == "ok")
        #expect(kinds["too-large", default: 0] >= 2 && kinds["decode", default: 0] >= corpus.count, "\(kinds)")

        // Their content decided: the next run opens none of them, and every output stands.
        let again = try workspace.run([job])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("0 done, 0 failed, \(kinds["done", default: 0]) up to date"), "\(again.stdout)")
        #expect(again.stdout.contains("\(rows.count - kinds["done", default: 0]) known failures"), "\(again.stdout)")
    }
}
