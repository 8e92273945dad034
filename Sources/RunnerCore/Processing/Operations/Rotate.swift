internal import CVips

/// Rotate clockwise by a multiple of 90 degrees (lossless, no resampling).
struct Rotate: ImageOperation {
    static let name = "rotate"
    let angle: Int

    init(reading parameters: ObjectReader, context: OperationContext) throws {
        angle = try parameters.int("angle", .oneOf([0, 90, 180, 270]))
    }

    var identifier: String { canonicalIdentifier(Self.name, [("angle", "\(angle)")]) }

    var needsRandomAccess: Bool { angle != 0 }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let vipsAngle: VipsAngle
        switch angle {
        case 90: vipsAngle = VIPS_ANGLE_D90
        case 180: vipsAngle = VIPS_ANGLE_D180
        case 270: vipsAngle = VIPS_ANGLE_D270
        default: return image
        }
        return try image.derive("rot") { cvips_rot($0, $1, vipsAngle) }
    }
}
