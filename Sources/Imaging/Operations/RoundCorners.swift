internal import CVips
import Keys

package struct RoundCorners: ImageOperation {
    package static let name = "roundCorners"
    package static let summary = "Make the chosen corners transparent outside a quarter circle, antialiased; the output gains alpha (Kingfisher's RoundCornerImageProcessor). The radius is capped at half the shorter side."

    package enum Corner: String, CaseIterable, Sendable { case topLeft, topRight, bottomLeft, bottomRight }

    package static let radius = Key.integer("radius", .pixels(.side), .required, "Corner radius in pixels.")
    package static let corners = Key.choices("corners", noun: "corner", .defaults(Corner.allCases), "Which corners to round.")
    package static let keys: [any KeyDeclaration] = [radius, corners]

    package let radius: Int
    /// Canonical order, no repeats.
    package let corners: [Corner]

    package init(reading parameters: ObjectReader, baseDirectory: String) throws {
        radius = try parameters.read(Self.radius)
        let chosen = Set(try parameters.read(Self.corners))
        corners = Corner.allCases.filter(chosen.contains)
    }

    package var identifier: String {
        canonicalIdentifier(Self.name, [("radius", "\(radius)"), ("corners", corners.map(\.rawValue).joined(separator: "+"))])
    }

    package func apply(to image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let radius = min(radius, image.width / 2, image.height / 2)
        guard radius > 0 else { return image }
        let full = try image.constant([image.maxValue])
        let topLeft = try cornerTile(radius: radius, like: full)
        var mask = full
        for corner in corners {
            let (right, bottom) = (corner == .topRight || corner == .bottomRight, corner == .bottomLeft || corner == .bottomRight)
            var tile = topLeft
            if right { tile = try tile.derive("flip") { cvips_flip($0, $1, VIPS_DIRECTION_HORIZONTAL) } }
            if bottom { tile = try tile.derive("flip") { cvips_flip($0, $1, VIPS_DIRECTION_VERTICAL) } }
            mask = try mask.inserting(tile, x: right ? image.width - radius : 0, y: bottom ? image.height - radius : 0)
        }
        let (colour, alpha) = try image.splitAlpha()
        guard let alpha else { return try colour.joined(with: mask) }
        // An existing alpha keeps its own transparency inside the rounded shape.
        let product = try alpha.derive("multiply") { cvips_multiply($0, mask.pointer, $1) }
        return try colour.joined(with: product.linear([1 / image.maxValue], [0]).cast(like: alpha))
    }

    /// The top-left `radius` x `radius` corner of the mask: opaque inside the circle around
    /// (radius, radius), transparent outside, with the pixel the edge crosses partly covered.
    private func cornerTile(radius: Int, like full: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        var grid: UnsafeMutablePointer<VipsImage>?
        guard cvips_xyz(&grid, Int32(radius), Int32(radius)) == 0, let grid else { throw VipsError.capture("xyz") }
        let centre = Double(radius) - 0.5
        // Distance from the circle's centre to each pixel's centre.
        let offsets = try VipsImageHandle(taking: grid, retaining: nil).linear([-1, -1], [centre, centre])
        let squares = try offsets.derive("multiply") { cvips_multiply($0, offsets.pointer, $1) }
        let sum = try squares.derive("recomb") { input, output in
            [1.0, 1.0].withUnsafeBufferPointer { cvips_recomb(input, output, $0.baseAddress, 1, 2) }
        }
        let distance = try sum.derive("pow") { cvips_pow_const1($0, $1, 0.5) }
        let top = full.maxValue
        return try distance.linear([-top], [(Double(radius) + 0.5) * top]).cast(like: full)
    }
}
