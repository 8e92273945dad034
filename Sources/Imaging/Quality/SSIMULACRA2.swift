internal import CVips
internal import CPerceptual
import Foundation

/// SSIMULACRA2 (Jon Sneyers, libjxl's `tools/ssimulacra2.cc`, the April 2023 weights): both
/// images to linear sRGB (alpha first laid over grey in sRGB's encoding, as the tool does), six
/// scales each a 2x2 box average of the last in linear light, each scale in XYB made positive, a
/// Gaussian of sigma 1.5 (zero outside the image, like libjxl's recursive one) for the means and
/// (co)variances, then per channel the SSIM map without its luminance denominator and the two edge
/// maps (artifacts, detail lost), each as a 1-norm and a 4-norm: 108 features, weighed and mapped
/// to 100 for identical images, 90 visually lossless, 70 high, 50 medium.
///
/// libvips decodes, converts to linear light and makes the scales; the per-pixel maps run in C
/// (CPerceptual): as chained libvips operations they took 0.7 s and 295 MB for a 512x384 pair.
/// The reference side is prepared once (`Reference`), so a quality search pays per encode only for
/// the distorted side.
package enum SSIMULACRA2 {
    /// Part of every remembered choice's key: a change to how scores come out changes this.
    package static let version = "ssimulacra2-2.1;runner-1"
    /// The reference tool refuses images with a side below this.
    package static let smallestSide = 8

    /// Why an image cannot be scored.
    package enum Unscorable: Error, Equatable, CustomStringConvertible {
        case tooSmall(width: Int, height: Int)
        case singleColour
        case sizesDiffer(reference: String, distorted: String)

        package var description: String {
            switch self {
            case .tooSmall(let width, let height): "\(width)x\(height) is below SSIMULACRA2's smallest size, 8x8"
            case .singleColour: "a single colour, which every quality reproduces"
            case .sizesDiffer(let reference, let distorted): "the images' sizes differ (\(reference) and \(distorted))"
            }
        }
    }

    /// One image prepared as the reference: per alpha background, each scale's XYB planes and their
    /// blurred planes and squares.
    package final class Reference {
        package let width: Int, height: Int
        private let sides: [Side]

        private struct Side {
            let background: Double?
            let scales: [Scale]
        }

        fileprivate struct Scale {
            let xyb: Planes, mean: Planes, meanOfSquares: Planes
        }

        /// Throws `Unscorable` for an image below 8x8 (`allowSingleColour` false: or of one colour), `VipsError` when libvips fails.
        package init(_ image: VipsImageHandle, allowSingleColour: Bool = true) throws {
            (width, height) = (image.width, image.height)
            guard width >= smallestSide, height >= smallestSide else { throw Unscorable.tooSmall(width: width, height: height) }
            if !allowSingleColour, try image.isOneColour() { throw Unscorable.singleColour }
            // The tool lays a translucent reference over dark and light grey and keeps the worse score.
            let backgrounds: [Double?] = image.hasAlpha ? [0.1, 0.9] : [nil]
            sides = try backgrounds.map { background throws(VipsError) in
                let scales = try Self.levels(of: image, over: background).map { xyb in
                    Scale(xyb: xyb, mean: xyb.blurred(), meanOfSquares: xyb.times(xyb).blurred())
                }
                return Side(background: background, scales: scales)
            }
        }

        /// Each scale's XYB planes: another scale while the last was at least 8 px on each side, as the tool goes.
        private static func levels(of image: VipsImageHandle, over background: Double?) throws(VipsError) -> [Planes] {
            var level = try image.linearRGB(over: background ?? 0.5).copiedToMemory()
            var levels = [Planes(positiveXYBOf: level)]
            while levels.count < 6 && level.width >= smallestSide && level.height >= smallestSide {
                level = try level.halved().copiedToMemory()
                levels.append(Planes(positiveXYBOf: level))
            }
            return levels
        }

        /// The score of `distorted`, which must be this image's size; the worse over both backgrounds for a translucent reference.
        package func score(_ distorted: VipsImageHandle) throws -> Double {
            guard distorted.width == width, distorted.height == height else {
                throw Unscorable.sizesDiffer(reference: "\(width)x\(height)", distorted: "\(distorted.width)x\(distorted.height)")
            }
            return try sides.map { side throws(VipsError) in
                let levels = try Self.levels(of: distorted, over: side.background)
                return Self.score(features: zip(side.scales, levels).map { reference, xyb in
                    (0..<3).map { channel in reference.norms(channel, against: xyb) }
                })
            }.min()!
        }

        /// The weighted sum of the features (per scale, per channel: SSIM, artifact and detail-lost
        /// 1- and 4-norms), mapped to the score. The tool's order is channel, scale, norm, then map;
        /// with fewer than six scales its weights simply run on.
        private static func score(features: [[[Double]]]) -> Double {
            var sum = 0.0, index = 0
            for channel in 0..<3 {
                for scale in features {
                    for norm in 0..<2 {
                        for map in 0..<3 {
                            sum += weights[index] * abs(scale[channel][map * 2 + norm])
                            index += 1
                        }
                    }
                }
            }
            var mapped = sum * 0.9562382616834844
            mapped = 2.326765642916932 * mapped - 0.020884521182843837 * mapped * mapped + 6.248496625763138e-05 * mapped * mapped * mapped
            return mapped > 0 ? 100 - 10 * pow(mapped, 0.6276336467831387) : 100
        }
    }

    /// The 108 weights of SSIMULACRA2 2.1, in the tool's order.
    private static let weights: [Double] = [
        0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
        1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
        1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
        1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
        0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
        0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
        0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
        225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
        176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0, 0.0,
        34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0008680556573291698,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437, 0.0, 0.0, 8.826982764996862,
        23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682, 0.9834382792465353, 0.0012286405048278493,
        171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0, 0.0005130064588990679, 0.0, 0.00010854057858411537,
    ]
}

/// One scale's three channels, each a plane of width x height floats.
private struct Planes {
    let width: Int, height: Int
    var channels: [[Float]]

    init(width: Int, height: Int, channels: [[Float]]) { (self.width, self.height, self.channels) = (width, height, channels) }

    /// XYB made positive, from a float image of three bands in memory (linear-light RGB).
    init(positiveXYBOf image: VipsImageHandle) {
        precondition(image.bandFormat == VIPS_FORMAT_FLOAT && image.bands == 3)
        (width, height) = (image.width, image.height)
        let pixels = width * height
        var (x, y, b) = (Self.plane(pixels), Self.plane(pixels), Self.plane(pixels))
        cvips_image_addr(image.pointer, 0, 0).withMemoryRebound(to: Float.self, capacity: pixels * 3) { rgb in
            cp_positive_xyb(rgb, pixels, &x, &y, &b)
        }
        channels = [x, y, b]
    }

    func map(_ body: ([Float]) -> [Float]) -> Planes { Planes(width: width, height: height, channels: channels.map(body)) }

    func times(_ other: Planes) -> Planes {
        Planes(width: width, height: height, channels: zip(channels, other.channels).map { Self.product($0, $1) })
    }

    /// A plane the C side fills whole: not zeroed first (a tenth of a score's time went to memset).
    static func plane(_ count: Int) -> [Float] { [Float](unsafeUninitializedCapacity: count) { _, made in made = count } }

    static func product(_ a: [Float], _ b: [Float]) -> [Float] {
        var out = plane(a.count)
        cp_multiply(a, b, &out, a.count)
        return out
    }

    func blurred() -> Planes {
        var temp = Self.plane(width * height)
        return map { blur($0, temp: &temp) }
    }

    func blur(_ plane: [Float], temp: inout [Float]) -> [Float] {
        var out = Self.plane(plane.count)
        cp_blur(plane, &out, &temp, Int32(width), Int32(height))
        return out
    }
}

extension SSIMULACRA2.Reference.Scale {
    /// One channel's six norms (SSIM, artifacts, detail lost; each 1-norm then 4-norm) for the distorted image's planes at this scale.
    fileprivate func norms(_ channel: Int, against distorted: Planes) -> [Double] {
        let x2 = distorted.channels[channel], x1 = xyb.channels[channel]
        var temp = Planes.plane(x1.count)
        let mean2 = distorted.blur(x2, temp: &temp), meanOfSquares2 = distorted.blur(Planes.product(x2, x2), temp: &temp)
        let meanOfProducts = distorted.blur(Planes.product(x1, x2), temp: &temp)
        var norms = [Double](repeating: 0, count: 6)
        cp_error_maps(x1, mean.channels[channel], meanOfSquares.channels[channel], x2, mean2, meanOfSquares2, meanOfProducts, x1.count, &norms)
        return norms
    }
}

/// The libvips side: linear light, scales, and the single-colour check.
extension VipsImageHandle {
    /// Whether every pixel is the same (alpha included).
    fileprivate func isOneColour() throws(VipsError) -> Bool {
        let stats = try derive("stats") { cvips_stats($0, $1) }
        return (0..<bands).allSatisfy { cvips_matrix_at(stats.pointer, 0, Int32(1 + $0)) == cvips_matrix_at(stats.pointer, 1, Int32(1 + $0)) }
    }

    /// Three bands of linear-light sRGB in 0...1. Alpha is laid over grey `background` in sRGB's
    /// encoding first, as the tool blends; grey images become three equal bands.
    fileprivate func linearRGB(over background: Double) throws(VipsError) -> VipsImageHandle {
        var (colour, alpha) = try splitAlpha()
        if colour.bands == 1 { colour = try colour.joined(with: colour).joined(with: colour) }
        guard let alpha else {
            guard bandFormat == VIPS_FORMAT_UCHAR else { return try colour.linear([1 / maxValue], [0]).linearFromSRGB() }
            // The table is of doubles, so the lookup's are too.
            return try colour.derive("maplut") { input, output in
                linearLookup.withUnsafeBufferPointer { cvips_maplut(input, output, $0.baseAddress, Int32($0.count)) }
            }.derive("cast") { cvips_cast($0, $1, VIPS_FORMAT_FLOAT) }
        }
        let opacity = try alpha.linear([1 / maxValue], [0])
        let blended = try colour.linear([1 / maxValue], [-background]).derive("multiply") { cvips_multiply($0, opacity.pointer, $1) }
        return try blended.linear([1], [background]).linearFromSRGB()
    }

    /// sRGB's transfer function undone, for samples in 0...1.
    private func linearFromSRGB() throws(VipsError) -> VipsImageHandle {
        let dark = try derive("relational_const") { cvips_lesseq_const1($0, $1, 0.04045) }
        let linearPart = try linear([1 / 12.92], [0])
        let powerPart = try linear([1 / 1.055], [0.055 / 1.055]).derive("pow") { cvips_pow_const1($0, $1, 2.4) }
        return try dark.derive("ifthenelse") { cvips_ifthenelse($0, linearPart.pointer, powerPart.pointer, $1) }
    }

    /// The next scale: 2x2 box averages, the last row and column repeated for an odd size.
    fileprivate func halved() throws(VipsError) -> VipsImageHandle {
        let even = try derive("embed") { cvips_embed_extend($0, $1, 0, 0, Int32(width + width % 2), Int32(height + height % 2), VIPS_EXTEND_COPY) }
        return try even.derive("shrink") { cvips_shrink($0, $1, 2) }
    }
}

/// sRGB's 8-bit samples in linear light.
private let linearLookup: [Double] = (0..<256).map { value in
    let sample = Double(value) / 255
    return sample <= 0.04045 ? sample / 12.92 : pow((sample + 0.055) / 1.055, 2.4)
}
