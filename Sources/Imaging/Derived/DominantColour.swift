import Support
import Keys

/// The most common colour, as `#rrggbb`: the pixels are counted in a 16x16x16 histogram of sRGB
/// (sharp's `stats().dominant`, which Gatsby's `dominantColor` uses), and the answer is the mean
/// of the pixels in the fullest bin rather than the bin's centre, so it is a colour the picture
/// has. Pixels less than half opaque are left out, unless there are only such pixels.
package struct DominantColour: PlainDerivedValue {
    package static let name = "dominant"
    package static let summary = "The most common colour as #rrggbb: the mean of the fullest bin of a 16x16x16 sRGB histogram (pixels under half opacity left out)."

    private static let bins = 16

    package init() {}

    package var identifier: String {
        canonicalIdentifier(Self.name, [("bins", "\(Self.bins)"), ("frame", "\(DerivationFrame.side)")])
    }

    package func value(of frame: DerivationFrame) -> JSONValue { .string(colour(rgba: frame.rgba).written) }

    package func colour(rgba: [UInt8]) -> Colour {
        let pixels = rgba.count / 4
        let opaque = (0..<pixels).filter { rgba[$0 * 4 + 3] >= 128 }
        let counted = opaque.isEmpty ? Array(0..<pixels) : opaque
        let width = 256 / Self.bins
        var counts = [Int](repeating: 0, count: Self.bins * Self.bins * Self.bins)
        var sums = [(r: Int, g: Int, b: Int)](repeating: (0, 0, 0), count: counts.count)
        for pixel in counted {
            let (r, g, b) = (Int(rgba[pixel * 4]), Int(rgba[pixel * 4 + 1]), Int(rgba[pixel * 4 + 2]))
            let bin = (r / width * Self.bins + g / width) * Self.bins + b / width
            counts[bin] += 1
            sums[bin] = (sums[bin].r + r, sums[bin].g + g, sums[bin].b + b)
        }
        // The first fullest bin in (red, green, blue) order, so ties always go the same way.
        guard let fullest = counts.indices.max(by: { counts[$0] < counts[$1] || (counts[$0] == counts[$1] && $0 > $1) }),
              counts[fullest] > 0 else { return Colour.black }
        let mean = { (sum: Int) in UInt8((sum + counts[fullest] / 2) / counts[fullest]) }
        return Colour(red: mean(sums[fullest].r), green: mean(sums[fullest].g), blue: mean(sums[fullest].b), alpha: 255)
    }
}
