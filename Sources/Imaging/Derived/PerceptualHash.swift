import Foundation
import Support
import Keys

/// A 64-bit perceptual hash: near-identical pictures (resized, recompressed, slightly cropped)
/// differ in few bits, different pictures in about half. Written as 16 hex digits, the first bit
/// the highest, in `imagehash`'s order (row by row), so the two can be compared digit for digit.
package protocol PerceptualHash: PlainDerivedValue {
    func hash(of grey: GreyPlane) -> UInt64
}

extension PerceptualHash {
    package func value(of frame: DerivationFrame) -> JSONValue { .string(Self.hex(hash(of: frame.grey))) }

    package static func hex(_ hash: UInt64) -> String { String(format: "%016llx", hash) }

    /// The bits, first one highest.
    static func packed(_ bits: [Bool]) -> UInt64 {
        bits.reduce(0) { $0 << 1 | ($1 ? 1 : 0) }
    }
}

/// dHash: the greyscale picture squeezed to 9x8, one bit per pair of horizontal neighbours, set
/// where the right one is brighter (`imagehash.dhash`, Pillow's Lanczos resampling included).
package struct DHash: PerceptualHash {
    package static let name = "dhash"
    package static let summary = "Difference hash, 64 bits as 16 hex digits (imagehash's dhash): near duplicates differ in at most 5 bits."

    /// Two sources whose dHashes differ in at most this many bits are near duplicates: above every
    /// resized or recompressed copy measured (at most 4 bits), below every pair of different photos
    /// (at least 6), over Debian's 49 wallpaper photos (docs/DESIGN.md, Derived values).
    package static let duplicateDistance = 5

    package init() {}

    package var identifier: String { canonicalIdentifier(Self.name, [("bits", "64"), ("frame", "\(DerivationFrame.side)")]) }

    package func hash(of grey: GreyPlane) -> UInt64 {
        let small = grey.resampled(width: 9, height: 8)
        return Self.packed((0..<8).flatMap { y in (0..<8).map { x in small[x + 1, y] > small[x, y] } })
    }
}

/// pHash: the greyscale picture at 32x32, its 2-D DCT, and one bit per lowest 8x8 frequency (the
/// constant term included), set where it is above their median (`imagehash.phash`).
package struct PHash: PerceptualHash {
    package static let name = "phash"
    package static let summary = "Perceptual (DCT) hash, 64 bits as 16 hex digits (imagehash's phash)."

    private static let side = 32
    /// cos(pi * k * (2n + 1) / 64) for the 8 lowest frequencies k and the 32 positions n.
    private static let basis: [[Double]] = (0..<8).map { k in
        (0..<side).map { n in cos(Double.pi * Double(k) * Double(2 * n + 1) / Double(2 * side)) }
    }

    package init() {}

    package var identifier: String {
        canonicalIdentifier(Self.name, [("bits", "64"), ("dct", "\(Self.side)"), ("frame", "\(DerivationFrame.side)")])
    }

    package func hash(of grey: GreyPlane) -> UInt64 {
        let small = grey.resampled(width: Self.side, height: Self.side)
        // Rows first (frequency u down the picture), then columns (v across): imagehash's
        // dct(dct(pixels, axis=0), axis=1), unscaled, which the median comparison does not mind.
        let rows = (0..<8).map { u in
            (0..<Self.side).map { x in (0..<Self.side).reduce(0.0) { $0 + Double(small[x, $1]) * Self.basis[u][$1] } }
        }
        let low = (0..<8).flatMap { u in (0..<8).map { v in (0..<Self.side).reduce(0.0) { $0 + rows[u][$1] * Self.basis[v][$1] } } }
        let sorted = low.sorted()
        let median = (sorted[31] + sorted[32]) / 2
        return Self.packed(low.map { $0 > median })
    }
}
