internal import CVips
import Foundation

/// `runner compare A B`: B's SSIMULACRA2 score against A, each file read as runner reads a source
/// (upright, its ICC profile or colour space to sRGB, 16-bit kept), so a user can try a target on
/// their own photos before putting it in a job.
package enum ImageComparison {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package static func score(reference: String, distorted: String) throws -> Double {
        let (original, compared) = (try opened(reference), try opened(distorted))
        do {
            return try SSIMULACRA2.score(original, compared)
        } catch let unscorable as SSIMULACRA2.Unscorable {
            throw Failure(description: "cannot score \(distorted) against \(reference): \(unscorable)")
        }
    }

    private static func opened(_ path: String) throws -> VipsImageHandle {
        do {
            let source = try VipsSourceHandle(path: path, byName: true)
            guard let pointer = cvips_open(source.pointer, VIPS_ACCESS_RANDOM, VIPS_FAIL_ON_ERROR) else { throw VipsError.capture("load") }
            let image = try VipsImageHandle(taking: pointer, retaining: nil).derive("autorot") { cvips_autorot($0, $1) }
            return try image.inSRGB().copiedToMemory()
        } catch let error as VipsError {
            throw Failure(description: "\(path): \(error.message)")
        }
    }
}

extension VipsImageHandle {
    /// sRGB or grey as runner takes a source in: through its ICC profile when it has one, else libvips' own conversion.
    func inSRGB() throws(VipsError) -> VipsImageHandle {
        let depth: Int32 = bandFormat == VIPS_FORMAT_USHORT ? 16 : 8
        if hasICCProfile, unusableICCProfileBytes == nil { return try derive("icc_transform") { cvips_icc_to_srgb($0, $1, depth) } }
        let kept = [VIPS_INTERPRETATION_sRGB, VIPS_INTERPRETATION_RGB16, VIPS_INTERPRETATION_B_W, VIPS_INTERPRETATION_GREY16]
        return kept.contains(interpretation) ? self : try derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
    }
}
