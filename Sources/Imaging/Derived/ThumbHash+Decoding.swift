internal import CVips
import Foundation

/// The picture a ThumbHash stands for: the reference `thumbHashToRGBA`, operation for operation
/// (at most 32 px on the longer side, in the hash's approximate aspect ratio).
extension ThumbHash {
    /// A decoded placeholder: `rgba` holds `width` × `height` pixels of 4 bytes.
    package struct Picture: Equatable, Sendable {
        package let width: Int
        package let height: Int
        package let rgba: [UInt8]
    }

    /// The header's constants; nil when `hash` is too short to hold them.
    private struct Header {
        let lDC, pDC, qDC, aDC, lScale, pScale, qScale, aScale: Double
        let hasAlpha: Bool
        let lx, ly: Int
        /// Width over height, as the reference approximates it from the luminance term counts.
        let ratio: Double

        init?(_ hash: [UInt8]) {
            guard hash.count >= 5 else { return nil }
            let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
            let header16 = Int(hash[3]) | Int(hash[4]) << 8
            (lDC, pDC, qDC) = (Double(header24 & 63) / 63, Double((header24 >> 6) & 63) / 31.5 - 1,
                               Double((header24 >> 12) & 63) / 31.5 - 1)
            lScale = Double((header24 >> 18) & 31) / 31
            hasAlpha = header24 >> 23 != 0
            (pScale, qScale) = (Double((header16 >> 3) & 63) / 63, Double((header16 >> 9) & 63) / 63)
            let isLandscape = header16 >> 15 != 0
            let (longer, shorter) = (hasAlpha ? 5 : 7, header16 & 7)
            guard !hasAlpha || hash.count >= 6, shorter > 0 else { return nil }
            (lx, ly) = (max(3, isLandscape ? longer : shorter), max(3, isLandscape ? shorter : longer))
            ratio = isLandscape ? Double(longer) / Double(shorter) : Double(shorter) / Double(longer)
            aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
            aScale = hasAlpha ? Double(hash[5] >> 4) / 15 : 0
        }
    }

    /// Decodes `hash` to at most `side` pixels on the longer side (the reference's 32 by default);
    /// nil when it is too short for what its header announces.
    package static func decode(_ hash: [UInt8], side: Int = 32) -> Picture? {
        guard let header = Header(hash) else { return nil }
        // The varying terms, 4 bits each; chroma is boosted 1.25x against quantisation, as the reference does.
        var index = 0, truncated = false
        func read(_ nx: Int, _ ny: Int, _ scale: Double) -> [Double] {
            var ac: [Double] = []
            for _ in terms(nx, ny).dropFirst() {
                let at = (header.hasAlpha ? 6 : 5) + (index >> 1)
                if at >= hash.count { truncated = true; return ac }
                ac.append((Double((Int(hash[at]) >> ((index & 1) << 2)) & 15) / 7.5 - 1) * scale)
                index += 1
            }
            return ac
        }
        let l = read(header.lx, header.ly, header.lScale)
        let p = read(3, 3, header.pScale * 1.25), q = read(3, 3, header.qScale * 1.25)
        let a = header.hasAlpha ? read(5, 5, header.aScale) : []
        guard !truncated else { return nil }
        return render(header, side: Double(side), l: l, p: p, q: q, a: a)
    }

    /// The inverse DCT at every pixel, then from luminance and chroma back to RGB.
    private static func render(_ header: Header, side: Double, l lAC: [Double], p pAC: [Double], q qAC: [Double], a aAC: [Double]) -> Picture {
        let w = jsRound(header.ratio > 1 ? side : side * header.ratio), h = jsRound(header.ratio > 1 ? side / header.ratio : side)
        var rgba = [UInt8](repeating: 0, count: w * h * 4)
        // The cosines of each column and row, computed once (the reference recomputes them per pixel).
        let (nx, ny) = (max(header.lx, header.hasAlpha ? 5 : 3), max(header.ly, header.hasAlpha ? 5 : 3))
        let cosX = (0..<w).map { x in (0..<nx).map { cos(Double.pi / Double(w) * (Double(x) + 0.5) * Double($0)) } }
        let cosY = (0..<h).map { y in (0..<ny).map { cos(Double.pi / Double(h) * (Double(y) + 0.5) * Double($0)) } }
        // `start` plus each term times its cosines, over the triangle of terms the encoder kept, in the reference's order.
        let (lTerms, chromaTerms, alphaTerms) = (terms(header.lx, header.ly).dropFirst(), terms(3, 3).dropFirst(), terms(5, 5).dropFirst())
        func sum(_ start: Double, _ ac: [Double], _ terms: ArraySlice<(cx: Int, cy: Int)>, _ fx: [Double], _ fy: [Double]) -> Double {
            zip(ac, terms).reduce(start) { value, term in value + term.0 * fx[term.1.cx] * fy[term.1.cy] * 2 }
        }
        // The reference stores into a Uint8Array, which truncates.
        func byte(_ channel: Double) -> UInt8 { UInt8(max(0, 255 * min(1, channel))) }
        for y in 0..<h {
            for x in 0..<w {
                let (fx, fy) = (cosX[x], cosY[y])
                let l = sum(header.lDC, lAC, lTerms, fx, fy)
                let p = sum(header.pDC, pAC, chromaTerms, fx, fy), q = sum(header.qDC, qAC, chromaTerms, fx, fy)
                let a = header.hasAlpha ? sum(header.aDC, aAC, alphaTerms, fx, fy) : header.aDC
                let b = l - 2.0 / 3.0 * p
                let r = (3 * l - b + q) / 2
                let i = (y * w + x) * 4
                (rgba[i], rgba[i + 1], rgba[i + 2], rgba[i + 3]) = (byte(r), byte(r - q), byte(b), byte(a))
            }
        }
        return Picture(width: w, height: h, rgba: rgba)
    }

    /// `hash` decoded to at most `side` pixels and written as a PNG (no metadata): the placeholder a
    /// page shows while the image loads.
    package static func placeholderPNG(_ hash: [UInt8], side: Int = 32) throws(VipsError) -> Data? {
        guard let picture = decode(hash, side: side) else { return nil }
        // An opaque picture goes without its alpha band: a smaller file for every tile of a page.
        let opaque = stride(from: 3, to: picture.rgba.count, by: 4).allSatisfy { picture.rgba[$0] == 255 }
        let pixels = opaque ? picture.rgba.enumerated().filter { $0.offset % 4 != 3 }.map(\.element) : picture.rgba
        let pointer = pixels.withUnsafeBytes {
            vips_image_new_from_memory_copy($0.baseAddress, $0.count, Int32(picture.width), Int32(picture.height),
                                            opaque ? 3 : 4, VIPS_FORMAT_UCHAR)
        }
        guard let pointer else { throw VipsError.capture("new_from_memory_copy") }
        let image = VipsImageHandle(taking: pointer, retaining: nil)
        return try image.encode("pngsave") { cvips_pngsave_buffer($0, $1, $2, 9, 0, 0, 8, CVIPS_KEEP_NONE) }
    }
}
