import Foundation
import Support
import Keys

/// The source's ThumbHash decoded to a PNG of at most 16 pixels, as a data URL: what a page's
/// blurred placeholder (Next.js's `blurDataURL`, a CSS background) takes as it is, so a site
/// needs no ThumbHash decoder of its own (PyPI's `thumbhash` 0.1.2 decodes wrongly). A browser
/// scales it up smoothly; the hash holds no detail a larger picture would show.
package struct PlaceholderDataURL: PlainDerivedValue {
    package static let name = "placeholder"
    package static let summary = "The ThumbHash decoded to a PNG of at most 16x16 as a data URL (data:image/png;base64,...; well under 2 kB), "
        + "for a page's blurred placeholder."

    package init() {}

    package static let side = 16

    package var identifier: String { canonicalIdentifier(Self.name, [("side", "\(Self.side)"), ("from", ThumbHash().identifier)]) }

    package func value(of frame: DerivationFrame) throws(VipsError) -> JSONValue {
        let hash = ThumbHash.encode(width: frame.width, height: frame.height, rgba: frame.rgba)
        guard let png = try ThumbHash.placeholderPNG(hash, side: Self.side) else { return .null }
        return .string("data:image/png;base64," + png.base64EncodedString())
    }
}
