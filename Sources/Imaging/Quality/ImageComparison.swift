internal import CVips
import Foundation
import Support

/// `runner compare A B`: B's SSIMULACRA2 score against A, each file read as runner reads a source
/// (upright, its ICC profile or colour space to sRGB, 16-bit kept), so a user can try a target on
/// their own photos before putting it in a job.
package enum ImageComparison {
    /// A file that cannot be read or scored: the command line named the wrong thing (exit 64).
    package struct Failure: ExitCoded, CustomStringConvertible {
        package let description: String
        package var exitCode: Int32 { ExitStatus.commandLine }
    }

    package static func score(reference: String, distorted: String) throws -> Double {
        try scores(reference: reference, distorted: [distorted])[0]
    }

    /// Each of `distorted` against one `reference`, prepared once.
    package static func scores(reference: String, distorted: [String]) throws -> [Double] {
        let original = try opened(reference)
        do {
            let prepared = try SSIMULACRA2.Reference(original)
            return try distorted.map { try prepared.score(opened($0)) }
        } catch let unscorable as SSIMULACRA2.Unscorable {
            throw Failure(description: "cannot score against \(reference): \(unscorable)")
        }
    }

    /// The file's pixels as runner takes a source in, in memory.
    package static func opened(_ path: String) throws -> VipsImageHandle {
        do {
            let source = try VipsSourceHandle(path: path, byName: true)
            guard let pointer = cvips_open(source.pointer, VIPS_ACCESS_RANDOM, VIPS_FAIL_ON_ERROR) else { throw VipsError.capture("load") }
            let image = try VipsImageHandle(taking: pointer, retaining: nil).derive("autorot") { cvips_autorot($0, $1) }
            return try image.withoutUnusableProfile().normalizedColour(.srgb).copiedToMemory()
        } catch let error as VipsError {
            throw Failure(description: error.message.contains(path) ? error.message : "\(path): \(error.message)")
        }
    }
}
