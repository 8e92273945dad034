internal import CVips
import Foundation

/// The small picture every derived value is computed from: an image already decoded (the largest
/// frame a source's render has) scaled to fit `side` x `side`, in sRGB, 8 bits, RGBA. One scale
/// of pixels the run already holds, no second decode; the values then read these few thousand
/// pixels in Swift, so each is checked against its reference implementation on the same bytes.
package struct DerivationFrame {
    /// ThumbHash's limit (it encodes at most 100x100); the others gain nothing from more: BlurHash
    /// and the dominant colour are averages, the hashes read 9x8 and 32x32, and libvips' attention
    /// crop works on a 32 px copy of whatever it is given.
    package static let side = 100

    package let width: Int
    package let height: Int
    /// `width * height * 4` bytes, row by row, straight (not premultiplied) alpha.
    package let rgba: [UInt8]
    /// The same pixels as a libvips image, for libvips' own analyses (the attention crop).
    package let image: VipsImageHandle

    /// `decoded` in display orientation and any colour space runner decodes to (sRGB, or grey or
    /// 16-bit kept); only its first page is read.
    package init(_ decoded: VipsImageHandle) throws(VipsError) {
        let side = Int32(Self.side)
        var small = try decoded.derive("thumbnail") { cvips_thumbnail_image($0, $1, side, side, VIPS_SIZE_DOWN, VIPS_INTERESTING_NONE) }
        if small.interpretation != VIPS_INTERPRETATION_sRGB {
            small = try small.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        }
        small = try small.cast(to: VIPS_FORMAT_UCHAR)
        if !small.hasAlpha { small = try small.withOpaqueAlpha() }
        guard small.bands == 4 else {
            throw VipsError(operation: "derive", message: "expected RGBA after conversion to sRGB, got \(small.bands) bands")
        }
        image = try small.copiedToMemory()
        (width, height) = (image.width, image.height)
        var size = 0
        guard let bytes = vips_image_write_to_memory(image.pointer, &size) else { throw VipsError.capture("write_to_memory") }
        defer { g_free(bytes) }
        rgba = Array(UnsafeRawBufferPointer(start: bytes, count: size))
    }

    /// Luma per pixel as Pillow's RGB to L conversion computes it (ITU-R 601-2 weights in 16-bit
    /// fixed point, alpha ignored), so the perceptual hashes start where `imagehash` starts.
    package var grey: GreyPlane {
        GreyPlane(width: width, height: height, values: (0..<width * height).map { index in
            let (red, green, blue) = (UInt32(rgba[index * 4]), UInt32(rgba[index * 4 + 1]), UInt32(rgba[index * 4 + 2]))
            return UInt8((red * 19595 + green * 38470 + blue * 7471 + 0x8000) >> 16)
        })
    }
}

/// One band of 8-bit values.
package struct GreyPlane: Equatable {
    package let width: Int
    package let height: Int
    package let values: [UInt8]

    package subscript(x: Int, y: Int) -> UInt8 { values[y * width + x] }

    /// Resampled to `newWidth` x `newHeight` (aspect not kept) with a Lanczos-3 filter, exactly as
    /// Pillow's `resize(..., LANCZOS)` does on an L image: horizontal pass, then vertical, each in
    /// 22-bit fixed point and rounded to 8 bits, the filter widened by the scale when shrinking.
    package func resampled(width newWidth: Int, height newHeight: Int) -> GreyPlane {
        var plane = self
        if newWidth != width {
            let weights = LanczosWeights(from: width, to: newWidth)
            plane = GreyPlane(width: newWidth, height: height, values: (0..<height).flatMap { y in
                (0..<newWidth).map { x in weights.apply(x) { values[y * width + $0] } }
            })
        }
        if newHeight != height {
            let weights = LanczosWeights(from: height, to: newHeight)
            let source = plane
            plane = GreyPlane(width: newWidth, height: newHeight, values: (0..<newHeight).flatMap { y in
                (0..<newWidth).map { x in weights.apply(y) { source.values[$0 * newWidth + x] } }
            })
        }
        return plane
    }
}

/// Pillow's `precompute_coeffs` and `normalize_coeffs_8bpc` for its Lanczos filter (support 3).
private struct LanczosWeights {
    private static let precision = 22
    /// Per output position: the first input position and the fixed-point weights from there.
    private let windows: [(first: Int, weights: [Int])]

    init(from inputSize: Int, to outputSize: Int) {
        let scale = Double(inputSize) / Double(outputSize)
        let filterScale = max(scale, 1)
        let support = 3 * filterScale
        let step = 1 / filterScale
        windows = (0..<outputSize).map { position in
            let centre = (Double(position) + 0.5) * scale
            let first = max(Int(centre - support + 0.5), 0)
            let end = min(Int(centre + support + 0.5), inputSize)
            var weights = (first..<end).map { Self.lanczos((Double($0) - centre + 0.5) * step) }
            let total = weights.reduce(0, +)
            if total != 0 { weights = weights.map { $0 / total } }
            return (first, weights.map { Int(($0 * Double(1 << Self.precision) + ($0 < 0 ? -0.5 : 0.5)).rounded(.towardZero)) })
        }
    }

    private static func lanczos(_ x: Double) -> Double { -3 <= x && x < 3 ? sinc(x) * sinc(x / 3) : 0 }

    private static func sinc(_ x: Double) -> Double { x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x) }

    /// One output value from the input values `value(i)`, rounded and clipped to 8 bits.
    func apply(_ position: Int, _ value: (Int) -> UInt8) -> UInt8 {
        let window = windows[position]
        var sum = 1 << (Self.precision - 1)
        for (offset, weight) in window.weights.enumerated() { sum += Int(value(window.first + offset)) * weight }
        return UInt8(clamping: sum >> Self.precision)
    }
}
