import Foundation
import Support
import Keys

/// BlurHash (Wolt): a placeholder of `x` by `y` cosine components in base83 text. The arithmetic
/// follows the PyPI reference `blurhash` (a port of Wolt's Swift encoder) operation for operation,
/// so the same pixels give the same string. Alpha is ignored, as there.
package struct BlurHash: DerivedValue {
    package static let name = "blurhash"
    package static let summary = "BlurHash placeholder (base83 text) with x by y components, from the image scaled to fit 100x100; alpha is ignored."
    package static let componentsX = Key.integer("x", .range(1, 9), .defaults(4), "Horizontal components: more is finer and longer.")
    package static let componentsY = Key.integer("y", .range(1, 9), .defaults(3), "Vertical components: more is finer and longer.")
    package static let keys: [any KeyDeclaration] = [componentsX, componentsY]

    package let componentsX: Int
    package let componentsY: Int

    package init(reading settings: ObjectReader) throws {
        componentsX = try settings.read(Self.componentsX)
        componentsY = try settings.read(Self.componentsY)
    }

    package init(x: Int, y: Int) {
        precondition((1...9).contains(x) && (1...9).contains(y), "BlurHash components are 1 to 9")
        (componentsX, componentsY) = (x, y)
    }

    package var identifier: String {
        canonicalIdentifier(Self.name, [("x", "\(componentsX)"), ("y", "\(componentsY)"), ("frame", "\(DerivationFrame.side)")])
    }

    package func value(of frame: DerivationFrame) -> JSONValue {
        .string(encode(width: frame.width, height: frame.height, rgba: frame.rgba))
    }

    /// The hash of an RGBA image (the alpha bytes are skipped).
    package func encode(width: Int, height: Int, rgba: [UInt8]) -> String {
        let linear = (0..<width * height * 3).map { Self.linearTable[Int(rgba[$0 / 3 * 4 + $0 % 3])] }
        let (w, h) = (Double(width), Double(height))
        var components: [[Double]] = []
        var largestAC = 0.0
        for j in 0..<componentsY {
            let cosY = (0..<height).map { cos(Double.pi * Double(j) * Double($0) / h) }
            for i in 0..<componentsX {
                let norm = i == 0 && j == 0 ? 1.0 : 2.0
                let cosX = (0..<width).map { cos(Double.pi * Double(i) * Double($0) / w) }
                var component = [0.0, 0.0, 0.0]
                for y in 0..<height {
                    for x in 0..<width {
                        let basis = norm * cosX[x] * cosY[y]
                        for band in 0..<3 { component[band] += basis * linear[(y * width + x) * 3 + band] }
                    }
                }
                component = component.map { $0 / (w * h) }
                if i > 0 || j > 0 { largestAC = max(largestAC, abs(component[0]), abs(component[1]), abs(component[2])) }
                components.append(component)
            }
        }
        return Self.text(components, componentsX: componentsX, componentsY: componentsY, largestAC: largestAC)
    }

    /// The components quantised and written in base83: size, maximum AC, DC, then each AC.
    private static func text(_ components: [[Double]], componentsX: Int, componentsY: Int, largestAC: Double) -> String {
        let dc = components[0].reduce(0) { $0 << 8 | srgb($1) }
        let quantisedMax = Int(max(0, min(82, (largestAC * 166 - 0.5).rounded(.down))))
        let normaliser = Double(quantisedMax + 1) / 166
        let quantise = { (value: Double) in Int(max(0, min(18, (signPow(value / normaliser, 0.5) * 9 + 9.5).rounded(.down)))) }
        var text = base83((componentsX - 1) + (componentsY - 1) * 9, digits: 1) + base83(quantisedMax, digits: 1) + base83(dc, digits: 4)
        for component in components.dropFirst() {
            text += base83(quantise(component[0]) * 19 * 19 + quantise(component[1]) * 19 + quantise(component[2]), digits: 2)
        }
        return text
    }

    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    /// `value` in `digits` base83 digits, the most significant first.
    private static func base83(_ value: Int, digits: Int) -> String {
        String((0..<digits).reversed().map { place in alphabet[(0..<place).reduce(value) { rest, _ in rest / 83 } % 83] })
    }

    /// sRGB byte to linear light, per byte value.
    private static let linearTable: [Double] = (0...255).map { byte in
        let value = Double(byte) / 255
        return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    /// Linear light back to an sRGB byte.
    private static func srgb(_ linear: Double) -> Int {
        let value = max(0, min(1, linear))
        if value <= 0.0031308 { return Int(value * 12.92 * 255 + 0.5) }
        return Int((1.055 * pow(value, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    private static func signPow(_ value: Double, _ exponent: Double) -> Double {
        copysign(pow(abs(value), exponent), value)
    }
}
