/// What metadata an output keeps: none (the default), the ICC profile only, or EXIF, XMP and ICC.
package enum MetadataPolicy: String, Sendable {
    case strip, icc, all
}

/// `srgb` converts every source to sRGB (the default); `keep` leaves RGB and grey pixels in their
/// own colour space (pair it with `keepIcc` so viewers can still render them).
package enum ColourSpacePolicy: String, CaseIterable, Sendable {
    case srgb, keep
}
/// How much damage a decoder tolerates before an image fails (libvips `fail_on`).
public enum FailOn: String, CaseIterable, Sendable, Codable {
    case none, truncated, error, warning
}

/// Decoder settings a worker applies to every source.
package struct DecodeSettings: Sendable, Equatable {
    package let failOn: FailOn
    package let autorotate: Bool
    package let colourSpace: ColourSpacePolicy

    package init(failOn: FailOn, autorotate: Bool, colourSpace: ColourSpacePolicy) {
        self.failOn = failOn
        self.autorotate = autorotate
        self.colourSpace = colourSpace
    }
}
