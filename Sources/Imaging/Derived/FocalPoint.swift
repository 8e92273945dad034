internal import CVips
import Foundation
import Support
import Keys

/// Where the picture's interest is, as fractions of its width and height from the top-left: the
/// centre of libvips' attention crop (what `"position": "attention"` crops around), so a site
/// can crop on the client (CSS `object-position`) the way runner crops on the server.
package struct FocalPoint: PlainDerivedValue {
    package static let name = "focal"
    package static let summary = "The centre of libvips' attention crop, as {\"x\", \"y\"} fractions of width and height from the top-left."
    package static let valueSchema: JSONValue = ["type": "object", "required": ["x", "y"], "additionalProperties": false, "description": .string(summary),
                                                 "properties": ["x": ["type": "number"], "y": ["type": "number"]]]

    /// The crop asked for, as a fraction of each side: it sets how much libvips blurs its map of
    /// interest before taking the peak (libvips works on a 32 px copy, so the answer is as precise as that).
    private static let cropFraction = 0.5

    package init() {}

    package var identifier: String {
        canonicalIdentifier(Self.name, [("interesting", "attention"), ("crop", Self.cropFraction.canonical),
                                        ("frame", "\(DerivationFrame.side)")])
    }

    package func value(of frame: DerivationFrame) throws(VipsError) -> JSONValue {
        let point = try point(of: frame.image)
        return .object(["x": .number(point.x), "y": .number(point.y)])
    }

    /// Fractions rounded to 3 places, so the written value is short and stable.
    package func point(of image: VipsImageHandle) throws(VipsError) -> (x: Double, y: Double) {
        let colour = try image.splitAlpha().colour
        let cropWidth = Int32(max(1, (Double(image.width) * Self.cropFraction).rounded()))
        let cropHeight = Int32(max(1, (Double(image.height) * Self.cropFraction).rounded()))
        var (x, y): (Int32, Int32) = (0, 0)
        _ = try colour.derive("smartcrop") { cvips_smartcrop_centre($0, $1, cropWidth, cropHeight, &x, &y) }
        let fraction = { (position: Int32, side: Int) in (min(max(Double(position) / Double(side), 0), 1) * 1000).rounded() / 1000 }
        return (fraction(x, image.width), fraction(y, image.height))
    }
}
