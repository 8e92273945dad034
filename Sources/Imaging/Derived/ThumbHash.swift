import Foundation
import Support
import Keys

/// ThumbHash (Evan Wallace): a placeholder of about 25 bytes that keeps the aspect ratio and alpha,
/// written in base64. A port of the reference `rgbaToThumbHash`, operation for operation, so the
/// same pixels give the same bytes as the reference (and the PyPI port `thumbhash`).
package struct ThumbHash: PlainDerivedValue {
    package static let name = "thumbhash"
    package static let summary = "ThumbHash placeholder (base64, about 25 bytes; keeps aspect ratio and alpha), from the image scaled to fit 100x100."

    package init() {}

    package var identifier: String { canonicalIdentifier(Self.name, [("frame", "\(DerivationFrame.side)")]) }

    package func value(of frame: DerivationFrame) -> JSONValue {
        .string(Data(Self.encode(width: frame.width, height: frame.height, rgba: frame.rgba)).base64EncodedString())
    }

    /// The hash's bytes for an image of at most 100x100.
    package static func encode(width w: Int, height h: Int, rgba: [UInt8]) -> [UInt8] {
        precondition(w <= 100 && h <= 100 && rgba.count == w * h * 4, "\(w)x\(h) doesn't fit in 100x100")
        let (average, opacity) = averageColour(rgba, count: w * h)
        let hasAlpha = opacity < Double(w * h)
        let limit = hasAlpha ? 5.0 : 7.0
        let lx = max(1, jsRound(limit * Double(w) / Double(max(w, h))))
        let ly = max(1, jsRound(limit * Double(h) / Double(max(w, h))))
        // Composited atop the average colour, as luminance, yellow-blue, red-green and alpha.
        var (l, p, q, a) = ([Double](), [Double](), [Double](), [Double]())
        for i in 0..<w * h {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = average.r * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = average.g * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = average.b * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l.append((r + g + b) / 3)
            p.append((r + g) / 2 - b)
            q.append(r - g)
            a.append(alpha)
        }
        let channel = { (values: [Double], nx: Int, ny: Int) in encodeChannel(values, nx: nx, ny: ny, w: w, h: h) }
        let (lDC, lAC, lScale) = channel(l, max(3, lx), max(3, ly))
        let (pDC, pAC, pScale) = channel(p, 3, 3)
        let (qDC, qAC, qScale) = channel(q, 3, 3)
        let alphaTerms = hasAlpha ? channel(a, 5, 5) : (dc: 1, ac: [], scale: 1)
        let isLandscape = w > h
        let header24 = jsRound(63 * lDC) | jsRound(31.5 + 31.5 * pDC) << 6 | jsRound(31.5 + 31.5 * qDC) << 12
            | jsRound(31 * lScale) << 18 | (hasAlpha ? 1 << 23 : 0)
        let header16 = (isLandscape ? ly : lx) | jsRound(63 * pScale) << 3 | jsRound(63 * qScale) << 9 | (isLandscape ? 1 << 15 : 0)
        var hash = [header24 & 255, (header24 >> 8) & 255, header24 >> 16, header16 & 255, header16 >> 8].map(UInt8.init)
        if hasAlpha { hash.append(UInt8(jsRound(15 * alphaTerms.dc) | jsRound(15 * alphaTerms.scale) << 4)) }
        let start = hash.count
        for (index, factor) in (lAC + pAC + qAC + alphaTerms.ac).enumerated() {
            if index % 2 == 0 { hash.append(0) }
            hash[start + index / 2] |= UInt8(jsRound(15 * factor) << ((index & 1) << 2))
        }
        return hash
    }

    /// The alpha-weighted average colour (0...1 per channel) and the sum of alpha.
    private static func averageColour(_ rgba: [UInt8], count: Int) -> (colour: (r: Double, g: Double, b: Double), opacity: Double) {
        var (r, g, b, a) = (0.0, 0.0, 0.0, 0.0)
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            r += alpha / 255 * Double(rgba[i * 4])
            g += alpha / 255 * Double(rgba[i * 4 + 1])
            b += alpha / 255 * Double(rgba[i * 4 + 2])
            a += alpha
        }
        if a != 0 { (r, g, b) = (r / a, g / a, b / a) }
        return ((r, g, b), a)
    }

    /// The DCT of one channel: the constant term, the varying terms scaled into 0...1, and their scale.
    private static func encodeChannel(_ channel: [Double], nx: Int, ny: Int, w: Int, h: Int) -> (dc: Double, ac: [Double], scale: Double) {
        var (dc, ac, scale) = (0.0, [Double](), 0.0)
        var fx = [Double](repeating: 0, count: w)
        for (cx, cy) in terms(nx, ny) {
            var f = 0.0
            for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
            for y in 0..<h {
                let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                for x in 0..<w { f += channel[x + y * w] * fx[x] * fy }
            }
            f /= Double(w * h)
            if cx > 0 || cy > 0 {
                ac.append(f)
                scale = max(scale, abs(f))
            } else {
                dc = f
            }
        }
        if scale != 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        return (dc, ac, scale)
    }

    /// The (cx, cy) of the cosine terms a channel of `nx` x `ny` keeps (a triangle), in the reference's
    /// order: row by row, the constant term first.
    static func terms(_ nx: Int, _ ny: Int) -> [(cx: Int, cy: Int)] {
        (0..<ny).flatMap { cy in (0...).prefix { $0 * ny < nx * (ny - cy) }.map { (cx: $0, cy: cy) } }
    }

    /// JavaScript's `Math.round`: halves round up, as the reference does.
    static func jsRound(_ value: Double) -> Int { Int((value + 0.5).rounded(.down)) }
}
