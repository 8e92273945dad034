internal import CVips
import Keys

package struct Rotate: ImageOperation {
    package static let name = "rotate"
    package static let summary = "Rotate clockwise. Multiples of 90 are lossless; other angles resample and grow the canvas to fit, filling the corners with background (a translucent one adds alpha)."
    package static let angle = Key.number("angle", .any, .required, "Degrees, clockwise; any number.")
    package static let background = Key.colour("background", .defaults(.black), "Fills the corners of angles that are not multiples of 90.")
    package static let keys: [any KeyDeclaration] = [angle, background]
    /// In [0, 360).
    package let angle: Double
    package let background: Colour

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        let written = try parameters.read(Self.angle)
        let turned = written.truncatingRemainder(dividingBy: 360)
        angle = turned < 0 ? turned + 360 : turned + 0   // + 0 folds -0 into 0
        background = try parameters.read(Self.background)
    }

    private var isRightAngle: Bool { angle.truncatingRemainder(dividingBy: 90) == 0 }

    package var identifier: String {
        canonicalIdentifier(Self.name, [("angle", angle.canonical)] + (isRightAngle ? [] : [("background", background.canonical)]))
    }

    package var needsRandomAccess: Bool { angle != 0 }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        guard isRightAngle else {
            let image = try image.withAlpha(for: background)
            let values = image.values(of: background)
            return try image.derive("rotate") { input, output in
                values.withUnsafeBufferPointer { cvips_rotate(input, output, angle, $0.baseAddress, Int32($0.count)) }
            }
        }
        guard angle != 0 else { return image }
        // VipsAngle counts quarter turns clockwise: D90 is 1, D180 2, D270 3.
        return try image.derive("rot") { cvips_rot($0, $1, VipsAngle(rawValue: UInt32(angle / 90))) }
    }
}
