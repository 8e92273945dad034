internal import CVips
import Foundation

/// Renders one source into every output that needs it, inside a worker process.
///
/// The source is read once; its header is checked against the limits before any pixel is
/// decoded; chains that start with `thumbnail` decode with shrink-on-load; chains that need the
/// full image share one decode. Each output fails or succeeds on its own.
struct ImagePipeline {
    let outputs: [OutputSpec]
    let limits: Limits

    struct Request: Sendable, Codable {
        let outputIndex: Int
        let path: String
    }

    struct Rendered: Sendable, Codable {
        let width: Int
        let height: Int
        let bytes: Int
    }

    func render(sourcePath: String, requests: [Request]) -> [Result<Rendered, ItemFailure>] {
        let source: SourceBytes
        let header: ImageHeader
        let opened: VipsImageHandle
        do {
            source = try FileLoader.read(sourcePath)
            (opened, header) = try open(source)
        } catch {
            return requests.map { _ in .failure(error) }
        }
        var sharedDecode: VipsImageHandle?
        let fullDecodes = requests.count { !(outputs[$0.outputIndex].chain.steps.first is any LoadingOperation) }
        return requests.map { request in
            let output = outputs[request.outputIndex]
            let settings = DecodeSettings(failOn: limits.failOn, autorotate: output.autorotate)
            do {
                var image: VipsImageHandle
                var steps = output.chain.steps[...]
                if let loader = steps.first as? any LoadingOperation {
                    steps = steps.dropFirst()
                    image = try decodeStep { () throws(VipsError) in try loader.load(source, header: header, settings: settings) }
                } else if fullDecodes == 1 {
                    let random = steps.contains { $0.needsRandomAccess } || (output.autorotate && header.orientation != 1)
                    let source = random ? try reopen(source, access: VIPS_ACCESS_RANDOM) : opened
                    image = try decodeStep { () throws(VipsError) in try normalizeColour(source) }
                } else {
                    // Several chains read the full image: decode it once, into memory.
                    if sharedDecode == nil {
                        sharedDecode = try decodeStep { () throws(VipsError) in try normalizeColour(opened).copiedToMemory() }
                    }
                    image = sharedDecode!
                }
                if output.autorotate, !(output.chain.steps.first is any LoadingOperation) {
                    image = try processStep("autorotate") { () throws(VipsError) in try image.derive("autorot") { cvips_autorot($0, $1) } }
                }
                for step in steps {
                    image = try processStep(type(of: step).name) { () throws(VipsError) in try step.apply(to: image) }
                }
                image = try processStep("finish") { () throws(VipsError) in try finish(image, alpha: output.encoder.supportsAlpha) }
                // Render before encoding: pixels are decoded lazily, so damage in the source shows up
                // here, as a decode failure, rather than inside the encoder.
                let pixels = try decodeStep { () throws(VipsError) in try image.copiedToMemory() }
                let data: Data
                do throws(VipsError) { data = try output.encoder.encode(pixels) } catch { throw ItemFailure(.encode, error.message) }
                try AtomicFile.write(data, to: request.path)
                return .success(Rendered(width: pixels.width, height: pixels.height, bytes: data.count))
            } catch let failure as ItemFailure {
                return .failure(failure)
            } catch {
                return .failure(ItemFailure(.process, "\(error)"))
            }
        }
    }

    /// Opens the header (lazily: no pixels yet) and applies the pixel limit.
    private func open(_ source: SourceBytes) throws(ItemFailure) -> (VipsImageHandle, ImageHeader) {
        guard !source.data.isEmpty else { throw ItemFailure(.decode, "empty file (0 bytes)") }
        let image = try reopen(source, access: VIPS_ACCESS_SEQUENTIAL)
        let header = ImageHeader(image)
        let pixels = header.width * header.height
        if pixels > limits.maxPixels {
            throw ItemFailure(.tooLarge, "image is \(header.width)x\(header.height) (\(pixels) pixels), over limits.maxPixels \(limits.maxPixels)")
        }
        return (image, header)
    }

    /// A lazy decoder over the source bytes: streaming top to bottom, or random access.
    private func reopen(_ source: SourceBytes, access: VipsAccess) throws(ItemFailure) -> VipsImageHandle {
        let pointer = source.withUnsafeBytes { bytes in
            cvips_new_from_buffer(bytes.baseAddress, bytes.count, access, limits.failOn.vipsValue)
        }
        guard let pointer else { throw ItemFailure(.decode, VipsError.capture("load").message) }
        return VipsImageHandle(taking: pointer, retaining: source)
    }

    /// Brings a fully decoded image to 8-bit-or-wider sRGB (or grey) from any profile, CMYK included.
    private func normalizeColour(_ image: VipsImageHandle) throws(VipsError) -> VipsImageHandle {
        if image.hasICCProfile {
            let converted = try image.derive("icc_transform") { cvips_icc_to_srgb($0, $1) }
            _ = cvips_remove(converted.pointer, "icc-profile-data")
            return converted
        }
        switch image.interpretation {
        case VIPS_INTERPRETATION_sRGB, VIPS_INTERPRETATION_B_W:
            return image
        case VIPS_INTERPRETATION_GREY16:
            return try image.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_B_W) }
        default:
            return try image.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        }
    }

    /// Last steps before encoding: 8-bit sRGB or grey, alpha flattened for formats without it.
    private func finish(_ image: VipsImageHandle, alpha: Bool) throws(VipsError) -> VipsImageHandle {
        var image = image
        switch image.interpretation {
        case VIPS_INTERPRETATION_sRGB, VIPS_INTERPRETATION_B_W:
            break
        case VIPS_INTERPRETATION_GREY16:
            image = try image.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_B_W) }
        default:
            image = try image.derive("colourspace") { cvips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        }
        if !alpha && image.hasAlpha {
            let white = [Double](repeating: 255, count: max(image.bands - 1, 1))
            image = try image.derive("flatten") { input, output in
                white.withUnsafeBufferPointer { cvips_flatten(input, output, $0.baseAddress, Int32($0.count)) }
            }
        }
        if image.bandFormat != VIPS_FORMAT_UCHAR {
            image = try image.derive("cast") { cvips_cast($0, $1, VIPS_FORMAT_UCHAR) }
        }
        return image
    }

    private func decodeStep(_ body: () throws(VipsError) -> VipsImageHandle) throws(ItemFailure) -> VipsImageHandle {
        do { return try body() } catch { throw ItemFailure(.decode, error.message) }
    }

    private func processStep(_ name: String, _ body: () throws(VipsError) -> VipsImageHandle) throws(ItemFailure) -> VipsImageHandle {
        do { return try body() } catch { throw ItemFailure(.process, "\(name): \(error.message)") }
    }
}
