internal import CVips
import Keys

/// Apply the EXIF orientation here. Loading already does this unless the output sets
/// `"autorotate": false`; then this step places the rotation where the chain needs it.
package struct Autorotate: ImageOperation {
    package static let name = "autorotate"
    package static let summary = "Apply the EXIF orientation at this point (for outputs with \"autorotate\": false)."

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {}

    package var identifier: String { canonicalIdentifier(Self.name, []) }

    package var needsRandomAccess: Bool { true }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("autorot") { cvips_autorot($0, $1) }
    }
}
