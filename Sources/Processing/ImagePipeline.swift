package import CVips
import Foundation
import Support
import Model
import Imaging
import JobFile

/// Renders one source into every output that needs it, inside a worker process: the source is read
/// once and its header checked against the limits before any pixel is decoded (`DecodeSharing`
/// then says how each output gets its pixels). Each output fails or succeeds on its own.
package struct ImagePipeline {
    package let outputs: [OutputSpec]
    package let limits: Limits
    /// The job's `derive` list; a task names which of them to compute.
    package let derive: DerivedValues
    /// The supervisor, which publishes the staged outputs (see `AtomicFile`).
    package let stagingOwner: pid_t
    /// Where outputs bound for a bucket are staged for the supervisor to upload (`Job.uploadFolder`).
    package let uploadFolder: String

    /// What one output needs from the source, decided from the header before any pixel is read.
    private struct OutputRoute {
        let output: OutputSpec
        /// The concrete encoder (`auto` resolved against the source's format).
        let encoder: any OutputEncoder
        /// Where its pixels come from: the first step decodes itself (thumbnail's shrink-on-load),
        /// or a full decode, possibly shared with other outputs (`DecodeSharing` decides).
        let need: Sources.Need
        let animated: Bool

        init(_ output: OutputSpec, header: ImageHeader, failOn: FailOn) {
            self.output = output
            encoder = output.encoder.resolved(for: header.format)
            animated = encoder.canAnimate && header.pages > 1
            // An animation decodes every page; a loader step then runs per frame like any op.
            if !animated, let loader = output.chain.steps.first as? Thumbnail {
                let frame = loader.scaledFrame(width: header.displayWidth(autorotate: output.autorotate),
                                               height: header.displayHeight(autorotate: output.autorotate))
                let settings = DecodeSettings(failOn: failOn, autorotate: output.autorotate, colourSpace: output.colourSpace)
                need = .load(loader, area: frame.width * frame.height, settings: settings, wholeFrame: loader.loadsWholeFrame)
            } else {
                let random = output.chain.steps.contains { $0.needsRandomAccess } || (output.autorotate && header.orientation != 1)
                need = .decode(Sources.Decode(colourSpace: output.colourSpace, animated: animated), random: random)
            }
        }
    }

    typealias Sources = DecodeSharing<Thumbnail>

    /// Read each source file again to hash it (`SourceFacts.contentHash`): about 1.8 ms of CPU per
    /// MB, up to a sixth of a plain thumbnail's, so only for a job that writes a site manifest.
    package let hashesSources: Bool

    /// Each output's last searched quality in this worker.
    private let recentQualities = RecentQualities()

    package init(outputs: [OutputSpec], limits: Limits, derive: DerivedValues = .none, stagingOwner: pid_t, uploadFolder: String = "",
                 hashesSources: Bool = false) {
        (self.outputs, self.limits, self.derive, self.stagingOwner, self.hashesSources) = (outputs, limits, derive, stagingOwner, hashesSources)
        self.uploadFolder = uploadFolder
    }

    /// One outcome per request, in order, each with its own rendering time plus an equal share of opening
    /// the source (a shared decode counts for the first output that needs it), so the times add up to the
    /// source's; the time `derive` (indices into the job's list) takes is the source's too.
    package func render(sourcePath: String, requests: [OutputRequest], derive: [Int] = [],
                        hashContent: Bool = false) -> (outcomes: [ItemOutcome], source: SourceFacts?, derivation: DerivationOutcome?) {
        let clock = { DispatchTime.now().uptimeNanoseconds }
        let started = clock()
        // Calls that succeed can leave text in libvips' error buffer (lcms does); it is not this source's.
        VipsError.clearMessages()
        var results: [Result<RenderedOutput, ItemFailure>]
        var derivation: DerivationOutcome? = nil
        var facts: SourceFacts? = nil
        var own = [UInt64](repeating: 0, count: requests.count)
        var skipped: [Int: ItemOutcome] = [:]
        do {
            let source = try open(sourcePath)
            let header = source.header
            // A block's width above the source's is not made: a narrower one holds its bytes.
            for (index, request) in requests.enumerated() {
                let output = outputs[request.outputIndex]
                let width = header.displayWidth(autorotate: output.autorotate)
                if let maker = output.sameBytes(in: outputs, sourceWidth: width) { skipped[index] = .skipped(sameAs: maker.name, sourceWidth: width) }
            }
            let made = requests.indices.filter { skipped[$0] == nil }
            let plans = made.map { OutputRoute(outputs[requests[$0].outputIndex], header: header, failOn: limits.failOn) }
            // The derivation reads a whole frame an output kept, so frames it can use are kept for it too.
            let steps = Sources(plans.map(\.need), keepingFrames: derive.isEmpty ? nil : { Self.derivationCanUse($0, header: header) }).steps
            results = Array(repeating: .failure(ItemFailure(.process, "not rendered")), count: requests.count)
            for (position, step) in steps.enumerated() {
                let (index, began) = (made[step.output], clock())
                results[index] = Result { () throws(ItemFailure) in
                    try render(requests[index], plans[step.output], step.pixels, at: position, from: source)
                }
                own[index] = clock() - began
            }
            if !derive.isEmpty { derivation = self.derivation(derive, source: source) }
            // A source that rendered or derived something is recorded as what it is; one that only failed is not.
            let derived = if case .computed? = derivation { true } else { false }
            if derived || !skipped.isEmpty || results.contains(where: { (try? $0.get()) != nil }) {
                facts = SourceFacts(bytes: source.bytes, width: header.displayWidth(autorotate: true),
                                    height: header.displayHeight(autorotate: true), format: header.formatName,
                                    contentHash: hashContent || hashesSources ? source.contentHash : nil)
            }
        } catch {
            results = requests.map { _ in .failure(error) }
            if !derive.isEmpty { derivation = .failed(error) }
        }
        let common = Double(clock() - started - own.reduce(0, +)) / Double(max(requests.count, 1))
        let outcomes = results.indices.map { index in
            if let skipped = skipped[index] { return skipped }
            let seconds = (Double(own[index]) + common) / 1e9
            switch results[index] {
            case .success(let rendered): return ItemOutcome.done(rendered, seconds: seconds)
            case .failure(let failure): return ItemOutcome.failed(failure, seconds: seconds)
            }
        }
        return (outcomes, facts, derivation)
    }

    /// One output: its pixels (decoded or loaded), its chain, the last conversions, encoded and staged.
    private func render(_ request: OutputRequest, _ plan: OutputRoute, _ pixels: Sources.Pixels, at step: Int,
                        from source: OpenedSource) throws(ItemFailure) -> RenderedOutput {
        VipsError.clearMessages()  // nor is it this output's
        let output = plan.output
        var (frames, steps) = try startingFrames(plan, pixels, at: step, source)
        for step in steps {
            frames = try frames.map { frame throws(ItemFailure) in
                try processStep(type(of: step).name) { () throws(VipsError) in try step.apply(to: frame) }
            }
        }
        var image = try processStep("frames") { () throws(VipsError) in try stack(frames) }
        image = try processStep("finish") { () throws(VipsError) in
            try finish(image, encoder: plan.encoder, metadata: output.metadata, frameHeight: plan.animated ? frames[0].height : nil)
        }
        // Render before encoding: pixels are decoded lazily, so damage in the source shows up
        // here, as a decode failure, rather than inside the encoder.
        let pixels = try decodeStep { () throws(VipsError) in try image.copiedToMemory() }
        let (data, quality) = try decodeStep(failingAs: .encode) { () throws(VipsError) in
            try encode(pixels, plan, request, from: source)
        }
        let staged = try AtomicFile.stage(data, for: output.destination.stagingPath(for: request.path, uploads: uploadFolder), owner: stagingOwner)
        TestPause.at(TestPause.workerStaged, subject: request.path)
        let warning = [source.header.warning, quality?.warning].compactMap { $0 }.joined(separator: "; ")
        var rendered = RenderedOutput(width: pixels.width, height: pixels.height, bytes: data.count,
                                      temporary: staged.temporary, warning: warning.isEmpty ? nil : warning)
        (rendered.sourceWidth, rendered.sourceHeight) = (source.header.width, source.header.height)
        let (mediaType, contentHash) = data.withUnsafeBytes { bytes in
            var hash = StableHash()
            hash.combine(bytes: bytes)
            return (ImageSignature.format(Array(bytes.prefix(ImageSignature.prefixLength)))?.mediaType, hash.hex)
        }
        let facts = OutputFacts(mediaType: mediaType ?? "application/octet-stream", contentHash: contentHash)
        (rendered.facts, rendered.quality) = (facts, quality)
        if output.template.hashSuffix != nil { rendered.path = output.template.named(request.path, hash: facts.shortHash) }
        return rendered
    }

    /// The output's bytes: at its fixed quality, or searched for its target (`QualitySearch`).
    private func encode(_ pixels: VipsImageHandle, _ plan: OutputRoute, _ request: OutputRequest,
                        from source: OpenedSource) throws(VipsError) -> (Data, QualityOutcome?) {
        let metadata = plan.output.metadata
        guard let searchable = plan.encoder as? any QualitySearchable, let target = searchable.target else {
            return (try plan.encoder.encode(pixels, metadata: metadata), nil)
        }
        let set = plan.output.set
        // The first guess: this item's last answer, else another width's of this source, else this output's for the last source.
        let seed: Int? = if case .seed(let quality)? = request.quality { quality } else {
            set.flatMap { source.qualities.seed(for: $0) } ?? recentQualities.seed(for: request.outputIndex)
        }
        let encoded = try QualitySearch.encode(pixels, with: searchable, target: target, hint: request.quality, seed: seed, metadata: metadata)
        if encoded.outcome.score != nil {
            if let set { source.qualities.record(encoded.outcome.quality, for: set) }
            recentQualities.record(encoded.outcome.quality, for: request.outputIndex)
        }
        return (encoded.data, encoded.outcome)
    }

    /// The frames an output's chain starts from (its loader step's image, or a full decode cut into
    /// frames and autorotated), and the steps still to run on them.
    private func startingFrames(_ plan: OutputRoute, _ pixels: Sources.Pixels, at step: Int,
                                _ source: OpenedSource) throws(ItemFailure) -> ([VipsImageHandle], ArraySlice<any ImageOperation>) {
        let output = plan.output
        let steps = output.chain.steps[...]
        let (decode, shared, random, headerDecoder): (Sources.Decode, Bool, Bool, Bool)
        switch pixels {
        case .load(let loader, let settings, let candidates, let keep):
            var image = try loaded(loader, settings: settings, candidates: candidates, keep: keep, at: step, from: source)
            // The loader streams the source top to bottom; a later step that reads out of order
            // (smart crop, trim, rotation) gets the result rendered to memory first, as libvips'
            // own thumbnail does before its smart crop. The copy is thumbnail-sized.
            if steps.dropFirst().contains(where: \.needsRandomAccess) {
                image = try decodeStep { () throws(VipsError) in try image.copiedToMemory() }
            }
            return ([image], steps.dropFirst())
        case .decode(let own, let ownRandom, let takes): (decode, shared, random, headerDecoder) = (own, false, ownRandom, takes)
        case .shared(let own, let takes): (decode, shared, random, headerDecoder) = (own, true, false, takes)
        }
        let frameLimit = output.frames ?? limits.frames
        if decode.animated, source.header.pages > frameLimit {
            throw ItemFailure(.tooLarge, "image has \(source.header.pages) frames, over the frames limit \(frameLimit)")
        }
        let image = try decoded(decode, shared: shared, random: random, headerDecoder: headerDecoder, from: source)
        var frames = decode.animated ? try processStep("frames") { () throws(VipsError) in try pages(of: image) } : [image]
        if output.autorotate {
            frames = try frames.map { frame throws(ItemFailure) in
                try processStep("autorotate") { () throws(VipsError) in try frame.derive("autorot") { cvips_autorot($0, $1) } }
            }
        }
        return (frames, steps)
    }

    /// A loader step's image (thumbnail's shrink-on-load). A responsive set loads once, as a
    /// cascade: the largest whole-frame output decodes from the source, and each smaller one is
    /// scaled from a frame an earlier step kept (`candidates`) when that is less work than decoding
    /// (`Cascade.base`), then kept itself when the plan says a later one can use it.
    private func loaded(_ loader: Thumbnail, settings: DecodeSettings, candidates: [Int], keep: Bool, at step: Int,
                        from source: OpenedSource) throws(ItemFailure) -> VipsImageHandle {
        let header = source.header
        let needed = loader.scaledFrame(width: header.displayWidth(autorotate: settings.autorotate),
                                        height: header.displayHeight(autorotate: settings.autorotate))
        // A candidate whose step failed kept nothing.
        let frames = candidates.compactMap { source.kept[$0]?.image }
        let decodeCost = header.decodeCost(toMake: needed, displayWidth: header.displayWidth(autorotate: settings.autorotate))
        let image: VipsImageHandle
        if let base = Cascade.base(for: needed, among: frames.map { ($0.width, $0.height) }, decodeCost: decodeCost) {
            image = try processStep(Thumbnail.name) { () throws(VipsError) in try loader.apply(to: frames[base]) }
        } else {
            image = try decodeStep { () throws(VipsError) in
                try droppingUnusableProfile(loader.load(source.file, header: header, settings: settings), header)
            }
        }
        // The very frame of a kept one (scaled from it unchanged) is not kept twice.
        guard keep, !frames.contains(where: { $0.width == image.width && $0.height == image.height }) else { return image }
        let kept = try decodeStep { () throws(VipsError) in try image.copiedToMemory() }
        source.kept[step] = (kept, settings)
        return kept
    }

    /// The source decoded whole: into memory once for the outputs that share a decode (by the first of
    /// them to get here), otherwise lazily (streaming, or random access when the chain needs it). A lazy
    /// decode is the header's own streaming decoder for the step the plan gives it, a fresh one otherwise.
    private func decoded(_ decode: Sources.Decode, shared: Bool, random: Bool, headerDecoder: Bool,
                         from source: OpenedSource) throws(ItemFailure) -> VipsImageHandle {
        if shared, let made = source.shared[decode] { return made }
        let image: VipsImageHandle
        if decode.animated {
            image = try reopen(source.file, access: VIPS_ACCESS_RANDOM, allPages: true)
        } else if headerDecoder, let unused = source.headerDecoder {
            (image, source.headerDecoder) = (unused, nil)
        } else {
            image = try reopen(source.file, access: random ? VIPS_ACCESS_RANDOM : VIPS_ACCESS_SEQUENTIAL)
        }
        let lazy = try decodeStep { () throws(VipsError) in
            try droppingUnusableProfile(image, source.header).normalizedColour(decode.colourSpace)
        }
        guard shared else { return lazy }
        let made = try decodeStep { () throws(VipsError) in try lazy.copiedToMemory() }
        source.shared[decode] = made
        return made
    }

    /// An animation's strip cut into its frames, so ops that change geometry work per frame.
    private func pages(of strip: VipsImageHandle) throws(VipsError) -> [VipsImageHandle] {
        let pageHeight = Int(vips_image_get_page_height(strip.pointer))
        return try (0..<strip.height / pageHeight).map { page throws(VipsError) in
            try strip.derive("extract_area") { cvips_extract_area($0, $1, 0, Int32(page * pageHeight), Int32(strip.width), Int32(pageHeight)) }
        }
    }

    /// Frames back into one strip; they must have come out of the chain the same size.
    private func stack(_ frames: [VipsImageHandle]) throws(VipsError) -> VipsImageHandle {
        guard frames.count > 1 else { return frames[0] }
        let sizes = Set(frames.map { "\($0.width)x\($0.height)" })
        guard sizes.count == 1 else {
            throw VipsError(operation: "frames", message: "the chain made frames of different sizes (\(sizes.sorted().joined(separator: ", "))); an animation needs one size")
        }
        return try VipsImageHandle.stacking(frames)
    }

    /// One source while its outputs render: the file, its header, and what the decode plan's
    /// steps made for later ones (and for the derivation).
    final class OpenedSource {
        let path: String
        let file: VipsSourceHandle
        let header: ImageHeader
        /// The file's size in bytes.
        let bytes: Int
        /// The file's content hash (`StableHash.ofFile`: the downloader's hash of an original), read
        /// once for all its outputs and its derivation; nil if the file cannot be read again.
        lazy var contentHash: String? = StableHash.ofFile(path)?.hex
        /// The streaming decoder the header was read with, until the step the plan gives it takes it.
        var headerDecoder: VipsImageHandle?
        /// Whole frames kept in memory for smaller outputs, by the step that made them, with the
        /// settings they were decoded with.
        var kept: [Int: (image: VipsImageHandle, settings: DecodeSettings)] = [:]
        /// The decodes made once for the outputs that share them.
        var shared: [Sources.Decode: VipsImageHandle] = [:]
        /// The qualities this source's searches chose, by block and format (`QualitySeeds`).
        var qualities = QualitySeeds()

        init(path: String, file: VipsSourceHandle, header: ImageHeader, headerDecoder: VipsImageHandle, bytes: Int) {
            (self.path, self.file, self.header, self.headerDecoder, self.bytes) = (path, file, header, headerDecoder, bytes)
        }
    }

    /// Opens the header (lazily: no pixels yet) and applies the pixel limit.
    private func open(_ path: String) throws(ItemFailure) -> OpenedSource {
        var info = stat()
        guard stat(path, &info) == 0, access(path, R_OK) == 0 else {
            throw ItemFailure(.unreadable, "\(path): \(String(cString: strerror(errno)))")
        }
        // A FIFO or a device put in a source's place after planning: opening it could block or
        // never end, and its size of 0 says nothing about its content.
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw ItemFailure(.unreadable, "\(path): not a regular file") }
        guard info.st_size > 0 else { throw ItemFailure(.decode, "empty file (0 bytes)") }
        let source: VipsSourceHandle
        do { source = try VipsSourceHandle(path: path, byName: !limits.blockUntrustedLoaders) } catch { throw ItemFailure(.unreadable, error.message) }
        let image = try reopen(source, access: VIPS_ACCESS_SEQUENTIAL)
        let header = ImageHeader(image)
        let pixels = header.width * header.height
        if pixels > limits.maxPixels {
            throw ItemFailure(.tooLarge, "image is \(header.width)x\(header.height) (\(pixels) pixels), over limits.maxPixels \(limits.maxPixels)")
        }
        // `limits.maxMemory` against what a full decode needs (width x height x bands x bytes per band).
        let bandBytes = Int(vips_format_sizeof(image.bandFormat))
        let needed = Double(image.width) * Double(image.height) * Double(image.bands) * Double(bandBytes)
        if needed > Double(limits.maxMemory) {
            let mib = { (bytes: Double) in String(format: "%.0f MiB", bytes / 1_048_576) }
            throw ItemFailure(.tooLarge, "image needs \(mib(needed)) decoded (\(image.width)x\(image.height), \(image.bands) bands of "
                              + "\(bandBytes) bytes), over limits.maxMemory \(limits.maxMemory) (\(mib(Double(limits.maxMemory))))")
        }
        return OpenedSource(path: path, file: source, header: header, headerDecoder: image, bytes: Int(info.st_size))
    }

    /// A lazy decoder over the source bytes: streaming top to bottom, or random access;
    /// the first page, or all of them as one strip.
    private func reopen(_ source: VipsSourceHandle, access: VipsAccess, allPages: Bool = false) throws(ItemFailure) -> VipsImageHandle {
        let pointer = allPages ? cvips_open_pages(source.pointer, access, limits.failOn.vipsValue)
            : cvips_open(source.pointer, access, limits.failOn.vipsValue)
        guard let pointer else {
            let message = VipsError.capture("load").message
            // Asked only after a failure: whether a trusted loader claims the first bytes (the
            // decoder's message stands), else which untrusted one would.
            let trusted = cvips_claiming_loader(source.pointer, 0) != nil
            let untrusted = trusted ? nil : cvips_claiming_loader(source.pointer, 1).map { String(cString: $0) }
            VipsError.clearMessages()
            throw Self.loadFailure(message, trusted: trusted, untrusted: untrusted)
        }
        return VipsImageHandle(taking: pointer, retaining: nil)
    }

    /// A file no loader claims says so (opened by descriptor, libvips has no name to put in its own
    /// "is not a known file format"). One only an untrusted loader reads names it and the setting
    /// that blocks it, except ImageMagick: it claims files it half recognises too (a TIFF cut off
    /// before its directory), so its claim may be a damaged file, not a reason to unblock it.
    private static func loadFailure(_ message: String, trusted: Bool, untrusted: String?) -> ItemFailure {
        if trusted { return ItemFailure(.decode, message) }
        guard let loader = untrusted?.replacingOccurrences(of: "_source", with: "") else {
            return ItemFailure(.decode, "is not a known file format: no loader recognises its first bytes")
        }
        let blocked = "libvips marks it untrusted and limits.blockUntrusted (true by default) blocks it"
        guard loader != "magickload" else {
            return ItemFailure(.decode, "no loader runner trusts reads it: a damaged file, or a format only ImageMagick reads "
                + "(libvips' magickload: \(blocked))")
        }
        return ItemFailure(.untrustedFormat, "only libvips' \(loader) reads this file; \(blocked): set it to false to read such files")
    }

    /// A profile libvips cannot use counts as absent (the header's warning says so): without it no
    /// transform trips over it and no output keeps it. The header spares the common case a profile check.
    func droppingUnusableProfile(_ image: VipsImageHandle, _ header: ImageHeader) throws(VipsError) -> VipsImageHandle {
        header.unusableProfileBytes == nil ? image : try image.withoutUnusableProfile()
    }

    /// Last steps before encoding: the colour space, depth and alpha the encoder takes, the metadata
    /// the output keeps, and the frame height an animation is saved with.
    private func finish(_ image: VipsImageHandle, encoder: any OutputEncoder, metadata: MetadataPolicy,
                        frameHeight: Int?) throws(VipsError) -> VipsImageHandle {
        var image = image
        let grey = image.interpretation == VIPS_INTERPRETATION_B_W || image.interpretation == VIPS_INTERPRETATION_GREY16
        let target = encoder.sixteenBit ? (grey ? VIPS_INTERPRETATION_GREY16 : VIPS_INTERPRETATION_RGB16)
            : (grey ? VIPS_INTERPRETATION_B_W : VIPS_INTERPRETATION_sRGB)
        if image.interpretation != target { image = try image.derive("colourspace") { cvips_colourspace($0, $1, target) } }
        if !encoder.supportsAlpha { image = try image.flattened(onto: .white) }
        let format = encoder.sixteenBit ? VIPS_FORMAT_USHORT : VIPS_FORMAT_UCHAR
        if image.bandFormat != format { image = try image.derive("cast") { cvips_cast($0, $1, format) } }
        // Metadata edits go on a copy: the image may be a decode other outputs share.
        image = try image.derive("copy") { cvips_copy($0, $1) }
        if let frameHeight {
            vips_image_set_int(image.pointer, "page-height", Int32(frameHeight))
        } else {
            // A single image: a page height left from the loader would make savers split it into frames.
            _ = cvips_remove(image.pointer, "page-height")
        }
        switch metadata {
        case .keep(let fields): image.keepingOnly(fields, iptc: encoder.iptcContainer)
        case .all: image.removingEmbeddedImages()
        }
        return image
    }

    func decodeStep<Value>(failingAs kind: ItemFailure.Kind = .decode,
                           _ body: () throws(VipsError) -> Value) throws(ItemFailure) -> Value {
        do { return try body() } catch { throw ItemFailure(kind, error.message) }
    }

    func processStep<Value>(_ name: String, _ body: () throws(VipsError) -> Value) throws(ItemFailure) -> Value {
        do { return try body() } catch { throw ItemFailure(.process, "\(name): \(error.message)") }
    }
}
