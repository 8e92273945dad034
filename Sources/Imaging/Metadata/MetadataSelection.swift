package import CVips
import Foundation
import Model

/// Where each `MetadataField` lives in a file: its EXIF tags (as libvips names them on a loaded
/// image, `ifd0-Artist`; a name ending in `-` takes every tag of that IFD), its XMP properties
/// (`prefix:Name` with the prefixes of `XMPPacket.namespaces`; a trailing `*` takes every property
/// so beginning) and its IPTC datasets (record 2). docs/JOB-FILE.md's field table says the same.
package struct MetadataFieldMap: Sendable {
    package let exif: [String]
    package let xmp: [String]
    package let iptc: [UInt8]

    package static func of(_ field: MetadataField) -> MetadataFieldMap {
        switch field {
        case .artist: .init(exif: ["ifd0-Artist"], xmp: ["dc:creator", "tiff:Artist", "photoshop:AuthorsPosition"], iptc: [80, 85])
        case .copyright: .init(exif: ["ifd0-Copyright"], xmp: ["dc:rights", "tiff:Copyright", "xmpRights:Marked"], iptc: [116])
        case .credit: .init(exif: [], xmp: ["photoshop:Credit", "photoshop:Source"], iptc: [110, 115])
        case .licence: .init(exif: [], xmp: ["xmpRights:UsageTerms", "xmpRights:WebStatement"], iptc: [])
        case .title: .init(exif: [], xmp: ["dc:title", "photoshop:Headline"], iptc: [5, 105])
        case .caption: .init(exif: ["ifd0-ImageDescription"], xmp: ["dc:description", "tiff:ImageDescription"], iptc: [120])
        case .keywords: .init(exif: [], xmp: ["dc:subject"], iptc: [25])
        case .datetime:
            .init(exif: ["ifd0-DateTime", "ifd2-DateTimeOriginal", "ifd2-DateTimeDigitized", "ifd2-SubSecTimeOriginal",
                         "ifd2-SubSecTimeDigitized", "ifd2-OffsetTimeOriginal", "ifd2-OffsetTimeDigitized"],
                  xmp: ["exif:DateTimeOriginal", "exif:DateTimeDigitized", "xmp:CreateDate", "xmp:ModifyDate", "photoshop:DateCreated"],
                  iptc: [55, 60, 62, 63])
        case .location:
            .init(exif: [], xmp: ["photoshop:City", "photoshop:State", "photoshop:Country", "Iptc4xmpCore:Location",
                                  "Iptc4xmpCore:CountryCode"], iptc: [90, 92, 95, 100, 101])
        case .camera: .init(exif: ["ifd0-Make", "ifd0-Model"], xmp: ["tiff:Make", "tiff:Model"], iptc: [])
        case .lens:
            .init(exif: ["ifd2-LensMake", "ifd2-LensModel", "ifd2-LensSpecification"],
                  xmp: ["aux:Lens", "aux:LensInfo", "exifEX:LensMake", "exifEX:LensModel", "exifEX:LensSpecification"], iptc: [])
        case .exposure:
            .init(exif: exposureTags.map { "ifd2-" + $0 }, xmp: exposureTags.map { "exif:" + $0 } + ["exifEX:PhotographicSensitivity"], iptc: [])
        case .gps: .init(exif: ["ifd3-"], xmp: ["exif:GPS*"], iptc: [])
        case .serial:
            .init(exif: ["ifd2-BodySerialNumber", "ifd2-LensSerialNumber"],
                  xmp: ["aux:SerialNumber", "aux:LensSerialNumber", "exifEX:BodySerialNumber", "exifEX:LensSerialNumber"], iptc: [])
        case .icc: .init(exif: [], xmp: [], iptc: [])
        }
    }

    private static let exposureTags = ["ExposureTime", "FNumber", "ExposureProgram", "ISOSpeedRatings", "ExposureBiasValue",
                                       "ApertureValue", "ShutterSpeedValue", "FocalLength", "FocalLengthIn35mmFilm", "Flash",
                                       "MeteringMode", "WhiteBalance"]
}

/// How a saver wants the IPTC block: JPEG's APP13 holds a Photoshop resource block, TIFF's tag
/// the bare records; the other formats libvips writes carry none.
package enum IPTCContainer: Sendable {
    case photoshop, records
}

extension MetadataPolicy {
    /// Whether the savers apply every policy themselves (libvips 8.15+ `keep` flags). On 8.14 they only
    /// strip all or nothing, and its webpsave not even that: `keepingOnly` leaves only what the
    /// output keeps on the image, and `WebPEncoder` cuts the chunks `strip` drops out of the file.
    package static let saversApplyIt = CVIPS_SAVERS_KEEP != 0

    /// The saver's `keep` (8.15+) or `strip` (8.14) argument: a kind of block is written when the
    /// policy keeps a field that lives there (libvips then adds its own EXIF tags: resolution, size).
    package var saverKeep: CVipsKeep {
        guard case .keep(let fields) = self else { return CVIPS_KEEP_ALL }
        let maps = fields.map(MetadataFieldMap.of)
        var flags = fields.contains(.icc) ? CVIPS_KEEP_ICC.rawValue : 0
        if maps.contains(where: { !$0.exif.isEmpty }) { flags |= CVIPS_KEEP_EXIF.rawValue }
        if maps.contains(where: { !$0.xmp.isEmpty }) { flags |= CVIPS_KEEP_XMP.rawValue }
        if maps.contains(where: { !$0.iptc.isEmpty }) { flags |= CVIPS_KEEP_IPTC.rawValue }
        return CVipsKeep(rawValue: flags)
    }
}

extension VipsImageHandle {
    /// Leaves on this image (a copy of its own: the fields are edited in place) only the metadata
    /// `fields` name, so any libvips writes exactly those: the chosen EXIF tags, from which the
    /// saver builds a fresh EXIF block (the source's block, its thumbnail and maker notes dropped), an
    /// XMP packet and IPTC records made of the chosen properties alone, and the profile if `icc`.
    package func keepingOnly(_ fields: Set<MetadataField>, iptc container: IPTCContainer?) {
        let maps = fields.map(MetadataFieldMap.of)
        let exif = maps.flatMap(\.exif).map { "exif-" + $0 }
        for name in fieldNames where Self.metadataPrefixes.contains(where: name.hasPrefix) {
            let kept = switch name {
            case "icc-profile-data": fields.contains(.icc)
            case "xmp-data", "iptc-data": true  // rebuilt below
            default: exif.contains { $0.hasSuffix("-") ? name.hasPrefix($0) : name == $0 }
            }
            if !kept {
                _ = cvips_remove(pointer, name)
            } else if name.hasPrefix("exif-"), let value = string(name), let raw = ExifText.raw(value) {
                vips_image_set_string(pointer, name, ExifText.settable(raw))
            }
        }
        replaceBlob("xmp-data") { XMPPacket.keeping(maps.flatMap(\.xmp), of: $0) }
        replaceBlob("iptc-data") { data in container.flatMap { IPTCRecords.keeping(Set(maps.flatMap(\.iptc)), of: data, as: $0) } }
    }

    /// Takes out of this image (a copy of its own) every image of the source its metadata holds,
    /// leaving the rest: the EXIF thumbnail and the IFD that describes it, maker notes (serials,
    /// sometimes places, and preview images), XMP thumbnails, Photoshop thumbnail resources. They
    /// show the source as it was (unrotated, before an edit, uncropped), never the output, so no
    /// policy keeps them; libvips then drops them from the EXIF block it rewrites.
    package func removingEmbeddedImages() {
        for name in fieldNames where Self.isEmbeddedImage(name) {
            _ = cvips_remove(pointer, name)
        }
        replaceBlob("xmp-data") { XMPPacket.removingImages(of: $0) }
        replaceBlob("iptc-data") { IPTCRecords.removingThumbnails(of: $0) }
    }

    /// libvips loads the EXIF thumbnail as `jpeg-thumbnail-data` and writes it back into any EXIF
    /// block it saves, whatever the tags around it.
    private static func isEmbeddedImage(_ name: String) -> Bool {
        name == "jpeg-thumbnail-data" || name.hasPrefix("exif-ifd1-") || name.hasPrefix("exif-") && name.hasSuffix("-MakerNote")
    }

    /// Metadata libvips loads and savers write: EXIF (blob, tags, thumbnail), XMP, IPTC, Photoshop,
    /// the ICC profile, PNG comments and ImageMagick profiles.
    package static let metadataPrefixes = ["exif-", "jpeg-thumbnail-data", "xmp-data", "iptc-data", "photoshop-data",
                                           "icc-profile-data", "png-comment-", "magickprofile-"]

    package func blob(_ name: String) -> Data? {
        var data: UnsafeRawPointer?
        var length = 0
        guard cvips_image_has(pointer, name) != 0, vips_image_get_blob(pointer, name, &data, &length) == 0, let data else { return nil }
        return Data(bytes: data, count: length)
    }

    /// Replaces blob `name` with what `body` makes of it, or removes it when that is nil.
    private func replaceBlob(_ name: String, _ body: (Data) -> Data?) {
        guard let data = blob(name) else { return }
        guard let replaced = body(data), !replaced.isEmpty else {
            _ = cvips_remove(pointer, name)
            return
        }
        replaced.withUnsafeBytes { vips_image_set_blob_copy(pointer, name, $0.baseAddress, $0.count) }
    }
}

/// libvips spells a loaded EXIF tag as `value (readable, format, n components, m bytes)` and
/// parses it back when saving. Text tags go back cut at their last ` (`, so a value that itself
/// ends in parentheses ("Jane (Studio)") would lose them: they are rewritten as the bare value
/// with an empty tail, which is all the saver removes.
package enum ExifText {
    /// The text of an ASCII tag, or nil for any other format (numbers round-trip as they are).
    package static func raw(_ loaded: String) -> String? {
        guard loaded.contains(", ASCII, ") else { return nil }
        var search = loaded.startIndex
        while let open = loaded.range(of: " (", range: search..<loaded.endIndex) {
            let value = loaded[..<open.lowerBound]
            let rest = loaded[open.upperBound...]
            // 8.16 repeats the value; 8.14 writes libexif's reading of Copyright after it (photographer, editor).
            if rest.hasPrefix(value + ", ") || rest.hasPrefix(value + " (Photographer)") {
                return String(value).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
            }
            search = open.upperBound
        }
        return nil
    }

    package static func settable(_ raw: String) -> String { raw + " ()" }
}
