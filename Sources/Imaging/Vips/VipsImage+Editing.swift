package import CVips
import Model

/// Small building blocks the chain ops share: band bookkeeping, colours in the image's own
/// range, constant layers and compositing. Each wraps one or two libvips calls.
extension VipsImageHandle {
    /// White in this image's sample range (16-bit images run to 65535).
    package var maxValue: Double { [VIPS_INTERPRETATION_RGB16, VIPS_INTERPRETATION_GREY16].contains(interpretation) ? 65535 : 255 }

    /// Bands that carry colour (alpha excluded).
    package var colourBands: Int { hasAlpha ? bands - 1 : bands }

    /// `colour` as band values for this image (alpha included when the image has one),
    /// scaled to its sample range.
    package func values(of colour: Colour, bands count: Int? = nil) -> [Double] {
        colour.bandValues(bands: count ?? bands).map { $0 * maxValue / 255 }
    }

    package func splitAlpha() throws(VipsError) -> (colour: VipsImageHandle, alpha: VipsImageHandle?) {
        guard hasAlpha else { return (self, nil) }
        let colour = try derive("extract_band") { cvips_extract_bands($0, $1, 0, Int32(bands - 1)) }
        let alpha = try derive("extract_band") { cvips_extract_bands($0, $1, Int32(bands - 1), 1) }
        return (colour, alpha)
    }

    package func joined(with other: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        try derive("bandjoin") { cvips_bandjoin2($0, other.pointer, $1) }
    }

    /// Applies `body` to the colour bands only, then puts the alpha band back unchanged.
    package func mappingColour(_ body: (VipsImageHandle) throws(VipsError) -> VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        let (colour, alpha) = try splitAlpha()
        let mapped = try body(colour)
        guard let alpha else { return mapped }
        return try mapped.joined(with: alpha.cast(like: mapped))
    }

    /// Alpha removed by laying the image on an opaque `background`; an image without alpha as it is.
    package func flattened(onto background: Colour) throws(VipsError) -> VipsImageHandle {
        guard hasAlpha else { return self }
        let values = values(of: background, bands: colourBands)
        return try derive("flatten") { input, output in
            values.withUnsafeBufferPointer { cvips_flatten(input, output, $0.baseAddress, Int32($0.count)) }
        }
    }

    /// An opaque alpha band added when a translucent `colour` is about to be drawn on an image without one.
    package func withAlpha(for colour: Colour) throws(VipsError) -> VipsImageHandle {
        colour.alpha < 255 ? try withOpaqueAlpha() : self
    }

    package func withOpaqueAlpha() throws(VipsError) -> VipsImageHandle {
        hasAlpha ? self : try derive("bandjoin_const") { cvips_bandjoin_const1($0, $1, maxValue) }
    }

    /// Grey images become RGB, so a colour drawn on them stays a colour.
    package func inRGB() throws(VipsError) -> VipsImageHandle {
        switch interpretation {
        case VIPS_INTERPRETATION_B_W: try derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        case VIPS_INTERPRETATION_GREY16: try derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_RGB16) }
        default: self
        }
    }

    /// Without an ICC profile libvips cannot use (damaged, or for another colour space): one that
    /// counts as absent, so no transform trips over it and no output keeps it.
    package func withoutUnusableProfile() throws(VipsError) -> VipsImageHandle {
        guard unusableICCProfileBytes != nil else { return self }
        let copy = try derive("copy") { cvips_copy($0, $1) }
        _ = cvips_remove(copy.pointer, "icc-profile-data")
        return copy
    }

    /// A fully decoded image in sRGB (or grey) from any profile, CMYK included: how a source is
    /// taken in. With `keep`, RGB and grey pixels stay in their own colour space; anything else
    /// still becomes sRGB. The profile the transform attaches (sRGB) stays for outputs that keep it.
    package func normalizedColour(_ policy: ColourSpacePolicy) throws(VipsError) -> VipsImageHandle {
        let rgbOrGrey = [VIPS_INTERPRETATION_sRGB, VIPS_INTERPRETATION_RGB16, VIPS_INTERPRETATION_B_W,
                         VIPS_INTERPRETATION_GREY16].contains(interpretation)
        if hasICCProfile && (policy == .srgb || !rgbOrGrey) {
            let depth: Int32 = bandFormat == VIPS_FORMAT_USHORT ? 16 : 8
            return try derive("icc_transform") { cvips_icc_to_srgb($0, $1, depth) }
        }
        // 16-bit RGB and grey stay 16-bit through the chain; `finish` picks the depth the encoder wants.
        return rgbOrGrey ? self : try derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
    }

    /// `a * value + b` per band (float result).
    package func linear(_ a: [Double], _ b: [Double]) throws(VipsError) -> VipsImageHandle {
        try derive("linear") { input, output in
            a.withUnsafeBufferPointer { a in
                b.withUnsafeBufferPointer { b in cvips_linear(input, output, a.baseAddress, b.baseAddress, Int32(a.count)) }
            }
        }
    }

    /// Back to `format`, rounded to nearest and clipped (a plain cast truncates).
    package func cast(to format: VipsBandFormat) throws(VipsError) -> VipsImageHandle {
        guard bandFormat != format else { return self }
        let rounded = try derive("rint") { cvips_rint($0, $1) }
        return try rounded.derive("cast") { cvips_cast($0, $1, format) }
    }

    package func cast(like other: VipsImageHandle) throws(VipsError) -> VipsImageHandle { try cast(to: other.bandFormat) }

    /// A same-sized image of one flat colour, sharing this image's format and interpretation.
    package func constant(_ values: [Double]) throws(VipsError) -> VipsImageHandle {
        let made = values.withUnsafeBufferPointer { vips_image_new_from_image(pointer, $0.baseAddress, Int32($0.count)) }
        guard let made else { throw VipsError.capture("new_from_image") }
        return VipsImageHandle(taking: made, retaining: nil)
    }

    /// Pads to `width` x `height` with this image at `x`, `y` and `colour` around it.
    package func embedded(x: Int, y: Int, width: Int, height: Int, background colour: Colour) throws(VipsError) -> VipsImageHandle {
        let image = try withAlpha(for: colour)
        let background = image.values(of: colour)
        return try image.derive("embed") { input, output in
            background.withUnsafeBufferPointer {
                cvips_embed(input, output, Int32(x), Int32(y), Int32(width), Int32(height), $0.baseAddress, Int32($0.count))
            }
        }
    }

    package func inserting(_ other: VipsImageHandle, x: Int, y: Int) throws(VipsError) -> VipsImageHandle {
        try derive("insert") { cvips_insert($0, other.pointer, $1, Int32(x), Int32(y)) }
    }

    /// `overlay` blended onto this image at `x`, `y`. libvips' composite always adds alpha;
    /// it is dropped again when this image had none and `mode` keeps an opaque base opaque.
    package func compositing(_ overlay: VipsImageHandle, mode: VipsBlendMode, x: Int = 0, y: Int = 0) throws(VipsError) -> VipsImageHandle {
        let base = try inRGB()
        let blended = try base.derive("composite2") { cvips_composite2($0, overlay.pointer, $1, mode, Int32(x), Int32(y)) }
        guard !base.hasAlpha, mode.keepsOpaqueBaseOpaque else { return blended }
        return try blended.derive("extract_band") { cvips_extract_bands($0, $1, 0, Int32(base.bands)) }
    }

    /// A layer of flat `colour` (with its alpha) the size of this image, for compositing.
    package func colourLayer(_ colour: Colour, opacity: Double = 1) throws(VipsError) -> VipsImageHandle {
        let base = try inRGB()
        var values = base.values(of: colour, bands: 4)
        values[3] *= opacity
        return try base.constant(values)
    }
}

/// libvips' value for `nick` in its enum `type`: the job file spells these choices as libvips names them.
package func vipsEnum(_ type: GType, _ nick: String) -> UInt32 { UInt32(bitPattern: vips_enum_from_nick("runner", type, nick)) }

extension VipsBlendMode {
    /// Modes whose result over an opaque base is opaque (`over`, `atop` and the separable blends).
    package var keepsOpaqueBaseOpaque: Bool {
        ![VIPS_BLEND_MODE_CLEAR, VIPS_BLEND_MODE_SOURCE, VIPS_BLEND_MODE_IN, VIPS_BLEND_MODE_OUT,
          VIPS_BLEND_MODE_DEST_IN, VIPS_BLEND_MODE_DEST_OUT, VIPS_BLEND_MODE_DEST_ATOP, VIPS_BLEND_MODE_XOR].contains(self)
    }
}
