internal import CVips

/// What the file's header says, read before any pixel is decoded.
struct ImageHeader {
    let width: Int
    let height: Int
    let orientation: Int
    let hasICCProfile: Bool
    let interpretation: VipsInterpretation

    init(_ image: VipsImageHandle) {
        width = image.width
        height = image.height
        orientation = image.orientation
        hasICCProfile = image.hasICCProfile
        interpretation = image.interpretation
    }

    /// Orientations 5-8 swap width and height when applied.
    func displayWidth(autorotate: Bool) -> Int { autorotate && orientation >= 5 ? height : width }
    func displayHeight(autorotate: Bool) -> Int { autorotate && orientation >= 5 ? width : height }

    /// An embedded profile or CMYK pixels: converting to sRGB takes real work.
    var needsColourTransform: Bool { hasICCProfile || interpretation == VIPS_INTERPRETATION_CMYK }
}

extension FailOn {
    var vipsValue: VipsFailOn {
        switch self {
        case .none: VIPS_FAIL_ON_NONE
        case .truncated: VIPS_FAIL_ON_TRUNCATED
        case .error: VIPS_FAIL_ON_ERROR
        case .warning: VIPS_FAIL_ON_WARNING
        }
    }
}
