import Foundation
import Model
import Keys

/// `"type": "auto"`, with each format's options under its name (`{"type": "auto", "jpeg": {"quality": 90}}`).
package struct AutoEncoder: OutputEncoder {
    package static let type = "auto"
    /// Any: it writes whatever the source is (see docs/JOB-FILE.md, Formats).
    package static let extensions: [String] = []
    package static let summary = "The source's own format when it is jpeg, png, webp, avif, tiff or gif (a HEIF file counts as avif when AV1-coded), else jpeg, or png when the finished image has alpha. Each format's options may be given under its name."
    package static let keys: [any KeyDeclaration] = [JPEGEncoder.self, PNGEncoder.self, WebPEncoder.self, AVIFEncoder.self,
                                             TIFFEncoder.self, GIFEncoder.self].map(options)

    /// The key holding a format's options (`"jpeg": {"quality": 90}`).
    private static func options(_ type: any OutputEncoder.Type) -> ObjectKey {
        ObjectKey(type.type, .fixed(ObjectShape(type.keys)), "Options when the source is kept as \(type.type).")
    }
    package let jpeg: JPEGEncoder
    package let png: PNGEncoder
    package let webp: WebPEncoder
    package let avif: AVIFEncoder
    package let tiff: TIFFEncoder
    package let gif: GIFEncoder

    package init(reading options: ObjectReader) throws {
        func read<Encoder: OutputEncoder>(_ type: Encoder.Type) throws -> Encoder {
            let nested = try options.object(Self.options(type))
            let encoder = try Encoder(reading: nested)
            try nested.finish()
            return encoder
        }
        (jpeg, png, webp) = (try read(JPEGEncoder.self), try read(PNGEncoder.self), try read(WebPEncoder.self))
        (avif, tiff, gif) = (try read(AVIFEncoder.self), try read(TIFFEncoder.self), try read(GIFEncoder.self))
    }

    package var identifier: String {
        let formats: [any OutputEncoder] = [jpeg, png, webp, avif, tiff, gif]
        return canonicalIdentifier(Self.type, formats.map { (Swift.type(of: $0).type, $0.identifier) })
    }

    package func resolved(for format: SourceFormat) -> any OutputEncoder {
        let kept: [SourceFormat: any OutputEncoder] = [.jpeg: jpeg, .png: png, .webp: webp, .avif: avif, .tiff: tiff, .gif: gif]
        return kept[format] ?? self
    }

    package func encode(_ image: VipsImageHandle, metadata: MetadataPolicy) throws(VipsError) -> Data {
        image.hasAlpha ? try png.encode(image, metadata: metadata) : try jpeg.encode(image, metadata: metadata)
    }
}
