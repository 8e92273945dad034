/// What metadata an output keeps: everything the source carries (`keepMetadata`), or only the
/// fields it names (`metadata.keep`; none by default, the ICC profile alone with `keepIcc`).
package enum MetadataPolicy: Sendable, Hashable {
    case all
    case keep(Set<MetadataField>)

    package static let strip = MetadataPolicy.keep([])
    package static let icc = MetadataPolicy.keep([.icc])

    /// Its canonical spelling in the recipe: the names in a fixed order, so listing them
    /// differently changes nothing; `strip` and `icc` are what `keepIcc` has always written. A
    /// policy that writes EXIF, XMP or IPTC says it drops the source's embedded images: outputs
    /// written before it did (which carried the source's EXIF thumbnail) are rendered again.
    package var identifier: String {
        switch self {
        case .all: "all" + Self.withoutEmbeddedImages
        case .keep(let fields) where fields.isEmpty: "strip"
        case .keep(let fields) where fields == [.icc]: "icc"
        case .keep(let fields): MetadataField.allCases.filter(fields.contains).map(\.rawValue).joined(separator: "+") + Self.withoutEmbeddedImages
        }
    }

    private static let withoutEmbeddedImages = "-embedded-images"
}

/// A piece of metadata an output may keep, by a name a photographer knows. Each stands for
/// EXIF, XMP and IPTC fields (`MetadataSelection` in Imaging has the map).
package enum MetadataField: String, CaseIterable, Sendable {
    case artist, copyright, credit, licence, title, caption, keywords, datetime, location, camera, lens, exposure, gps, serial, icc
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
        (self.failOn, self.autorotate, self.colourSpace) = (failOn, autorotate, colourSpace)
    }
}
