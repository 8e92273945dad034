internal import CVips

/// Apply the EXIF orientation here. Loading already does this unless the output sets
/// `"autorotate": false`; then this step places the rotation where the chain needs it.
struct Autorotate: ImageOperation {
    static let name = "autorotate"
    static let summary = "Apply the EXIF orientation at this point (for outputs with \"autorotate\": false)."
    static let keys: [any KeyDeclaration] = []

    init(reading parameters: ObjectReader, context: OperationContext) throws {}

    var identifier: String { canonicalIdentifier(Self.name, []) }

    var needsRandomAccess: Bool { true }

    func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try image.derive("autorot") { cvips_autorot($0, $1) }
    }
}
