import CVips
import Foundation
import Testing
import TestSupport

/// Renders `source` through one output written as JSON, the way a worker does, and opens the result.
struct Render {
    let workspace: Workspace
    let outputPath: String
    let result: Result<RenderedOutput, ItemFailure>

    /// `files` are fixtures copied beside the job file first, for ops that name files relative to it.
    init(_ source: String, chain: String, format: String = #"{"type": "png"}"#, extension fileExtension: String = "png",
         output extra: String = "", limits: String = "", files: [String] = []) throws {
        workspace = try Workspace()
        try workspace.copyFixtures(files, to: ".")
        try Self.startVips()
        let job = try Job.parse(text: """
            {"version": 1, "sources": [{"path": "."}], \(limits.isEmpty ? "" : limits + ",")
             "outputs": [{"name": "o", "path": "out/{stem}.\(fileExtension)", "chain": [\(chain)], "format": \(format)\(extra)}]}
            """, filePath: workspace.path("job.json"))
        outputPath = workspace.path("out/result.\(fileExtension)")
        let pipeline = ImagePipeline(outputs: job.outputs, limits: job.limits, stagingOwner: getpid())
        let outcome = pipeline.render(sourcePath: Fixtures.path(source), requests: [.init(outputIndex: 0, path: outputPath)]).outcomes[0]
        switch outcome {
        case .done(let rendered, _): result = .success(rendered)
        case .failed(let failure, _): result = .failure(failure)
        case .blocked, .skipped: result = .failure(ItemFailure(.process, "not made: \(outcome.reason ?? "")"))
        }
        if case .success(let rendered) = result {
            #expect(AtomicFile.publish([.init(temporary: rendered.temporary, path: outputPath)]) == [nil])
        }
    }

    /// Once per process, after ImageProbe's own start (tests run in parallel).
    private static let vipsStarted: Result<Void, any Error> = {
        ImageProbe.startVips()
        return Result { try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true) }
    }()

    static func startVips() throws { try vipsStarted.get() }

    var probe: ImageProbe? { ImageProbe.open(outputPath) }
    var bytes: Int { (try? FileManager.default.attributesOfItem(atPath: outputPath)[.size] as? Int) ?? 0 }
}

@Suite("Processing: chain ops on real libvips output")
struct ProcessingTests {
    // fixtures/photos/picos-de-europa.jpg is 1024x768.
    @Test("thumbnail fits", arguments: [
        ("cover", 100, 100, 100, 100), ("inside", 100, 100, 100, 75), ("fill", 100, 50, 100, 50),
        ("contain", 100, 100, 100, 100), ("outside", 100, 100, 133, 100),
    ])
    func thumbnailFits(fit: String, width: Int, height: Int, expectedWidth: Int, expectedHeight: Int) throws {
        let render = try Render("photos/picos-de-europa.jpg",
                                chain: #"{"op": "thumbnail", "width": \#(width), "height": \#(height), "fit": "\#(fit)"}"#)
        let probe = try #require(render.probe)
        #expect(probe.width == expectedWidth && probe.height == expectedHeight)
    }

    @Test("contain letterboxes with the background colour")
    func containBackground() throws {
        let render = try Render("photos/picos-de-europa.jpg",
                                chain: ##"{"op": "thumbnail", "width": 100, "height": 100, "fit": "contain", "background": "#ff0000"}"##)
        #expect(ImageProbe.pixel(render.outputPath, x: 50, y: 2) == [255, 0, 0])
        #expect(ImageProbe.pixel(render.outputPath, x: 50, y: 97) == [255, 0, 0])
        #expect(ImageProbe.pixel(render.outputPath, x: 50, y: 50) != [255, 0, 0])

        let clear = try Render("photos/picos-de-europa.jpg",
                               chain: ##"{"op": "thumbnail", "width": 100, "height": 100, "fit": "contain", "background": "#00000000"}"##)
        #expect(clear.probe?.hasAlpha == true)
        #expect(ImageProbe.pixel(clear.outputPath, x: 50, y: 2)?.last == 0, "the bars are transparent")
        #expect(ImageProbe.pixel(clear.outputPath, x: 50, y: 50)?.last == 255, "the picture is opaque")
    }

    @Test("thumbnail never enlarges unless asked")
    func enlarge() throws {
        let kept = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "thumbnail", "width": 3000, "height": 3000, "fit": "inside"}"#)
        #expect(kept.probe?.width == 1024)
        let grown = try Render("photos/picos-de-europa.jpg",
                               chain: #"{"op": "thumbnail", "width": 2048, "height": 3000, "fit": "inside", "enlarge": true}"#)
        #expect(grown.probe?.width == 2048 && grown.probe?.height == 1536)
    }

    @Test("EXIF orientations 1-8 all come out upright", arguments: 1...8)
    func orientation(_ tag: Int) throws {
        let upright = Fixtures.path("orientation/upright.png")
        // Shrink-on-load path and full-decode path both honour the tag.
        for chain in [#"{"op": "thumbnail", "width": 300, "height": 300, "fit": "inside"}"#, #"{"op": "grayscale"}, {"op": "rotate", "angle": 0}"#] {
            let render = try Render("orientation/orient-\(tag).jpg", chain: chain)
            let probe = try #require(render.probe)
            #expect(probe.width == 300 && probe.height == 200, "orientation \(tag): \(probe.width)x\(probe.height)")
            if probe.bands == 3 {
                let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, upright))
                #expect(difference < 8, "orientation \(tag) differs by \(difference)")
            }
        }
    }

    @Test("autorotate off keeps the stored pixels; the autorotate op applies the tag where it stands")
    func autorotateOption() throws {
        let stored = try Render("orientation/orient-6.jpg", chain: #"{"op": "blur", "sigma": 0.5}"#, output: #", "autorotate": false"#)
        #expect(stored.probe?.width == 200 && stored.probe?.height == 300)
        let placed = try Render("orientation/orient-6.jpg", chain: #"{"op": "crop", "width": 200, "height": 250, "gravity": "north"}, {"op": "autorotate"}"#,
                                output: #", "autorotate": false"#)
        #expect(placed.probe?.width == 250 && placed.probe?.height == 200)
    }

    @Test("crop by box and by gravity; rotate swaps sides; grayscale has one band")
    func geometry() throws {
        let box = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "crop", "x": 100, "y": 50, "width": 300, "height": 200}"#)
        #expect(box.probe?.width == 300 && box.probe?.height == 200)
        let clipped = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "crop", "x": 900, "y": 700, "width": 300, "height": 200}"#)
        #expect(clipped.probe?.width == 124 && clipped.probe?.height == 68)
        let gravity = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "crop", "width": 5000, "height": 100, "gravity": "south"}"#)
        #expect(gravity.probe?.width == 1024 && gravity.probe?.height == 100)
        let rotated = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "rotate", "angle": 90}"#)
        #expect(rotated.probe?.width == 768 && rotated.probe?.height == 1024)
        let grey = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "grayscale"}"#)
        #expect(grey.probe?.bands == 1)
    }

    @Test("blur smooths and sharpen keeps size and colour")
    func filters() throws {
        let original = try Render("formats/photo.png", chain: "")
        let blurred = try Render("formats/photo.png", chain: #"{"op": "blur", "sigma": 4}"#)
        let sharpened = try Render("formats/photo.png", chain: #"{"op": "sharpen", "sigma": 1, "m2": 4}"#)
        // A blurred photo compresses better than the original; a sharpened one worse.
        #expect(blurred.bytes < original.bytes * 3 / 4, "\(blurred.bytes) vs \(original.bytes)")
        #expect(sharpened.bytes > original.bytes)
        #expect(sharpened.probe?.width == 400 && sharpened.probe?.bands == 3)
        let difference = try #require(ImageProbe.meanAbsoluteDifference(blurred.outputPath, original.outputPath))
        #expect(difference > 1)
    }

    @Test("colour: CMYK, Adobe RGB and 16-bit come out 8-bit sRGB", arguments: [
        "formats/cmyk.jpg", "formats/cmyk-noprofile.jpg", "formats/adobergb.jpg", "formats/rgb16.png",
    ])
    func colour(source: String) throws {
        for chain in [#"{"op": "thumbnail", "width": 200, "height": 200, "fit": "inside"}"#, #"{"op": "blur", "sigma": 1}"#] {
            let render = try Render(source, chain: chain, format: #"{"type": "jpeg"}"#, extension: "jpg")
            let probe = try #require(render.probe, "\(source): \(render.result)")
            #expect(probe.bands == 3 && probe.interpretation == "srgb", "\(source)")
            // Same picture as the plain sRGB photo the fixtures were made from.
            let reference = try Render("formats/photo.jpg", chain: chain, format: #"{"type": "jpeg"}"#, extension: "jpg")
            let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, reference.outputPath))
            #expect(difference < 12, "\(source) differs from the sRGB original by \(difference)")
        }
    }

    @Test("16-bit grey stays grey, 8-bit")
    func grey16() throws {
        let render = try Render("formats/gray16.tif", chain: #"{"op": "thumbnail", "width": 100, "height": 100, "fit": "inside"}"#)
        let probe = try #require(render.probe)
        #expect(probe.bands == 1 && probe.interpretation == "b-w")
    }

    @Test("alpha survives into PNG and WebP, is flattened onto white for JPEG")
    func alpha() throws {
        let png = try Render("formats/alpha.png", chain: "")
        #expect(png.probe?.hasAlpha == true)
        let corner = try #require(ImageProbe.pixel(png.outputPath, x: 0, y: 0))
        let jpeg = try Render("formats/alpha.png", chain: "", format: #"{"type": "jpeg"}"#, extension: "jpg")
        #expect(jpeg.probe?.bands == 3)
        if corner.last == 0 {
            let flattened = try #require(ImageProbe.pixel(jpeg.outputPath, x: 0, y: 0))
            #expect(flattened.allSatisfy { $0 > 240 })
        }
        let webp = try Render("formats/alpha.png", chain: "", format: #"{"type": "webp"}"#, extension: "webp")
        #expect(webp.probe?.hasAlpha == true)
    }

    @Test("every supported input format decodes", arguments: [
        "formats/photo.jpg", "formats/photo.png", "formats/photo.webp", "formats/photo.tif", "formats/photo.gif",
        "formats/photo.heic", "formats/grey.jpg", "formats/animated.gif", "formats/animated.webp",
    ])
    func inputFormats(source: String) throws {
        let render = try Render(source, chain: #"{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}"#)
        let probe = try #require(render.probe, "\(source): \(render.result)")
        #expect(max(probe.width, probe.height) == 64)
    }

    @Test("quirky but valid files decode under the default fail_on")
    func quirky() throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: Fixtures.path("quirky")).sorted() {
            let render = try Render("quirky/" + name, chain: #"{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}"#)
            #expect(render.probe != nil, "\(name): \(render.result)")
        }
    }

    @Test("a render on a libvips thread, as the worker's, makes the same image as on any other")
    func rendersOnLibvipsThread() throws {
        let chain = #"{"op": "thumbnail", "width": 900, "fit": "inside"}, {"op": "sharpen", "sigma": 1}"#
        let here = try Render("photos/picos-de-europa.jpg", chain: chain)
        #expect(vips_thread_isvips() == 0)
        let (onLibvipsThread, there) = VipsRuntime.onLibvipsThread {
            (vips_thread_isvips() != 0, Result { try Render("photos/picos-de-europa.jpg", chain: chain) })
        }
        #expect(onLibvipsThread)
        let render = try there.get()
        #expect(render.probe?.width == 900 && here.probe?.width == 900)
        #expect(ImageProbe.meanAbsoluteDifference(here.outputPath, render.outputPath) == 0)
    }

    @Test("the pixel limit is checked from the header, before decoding")
    func pixelLimit() throws {
        let render = try Render("photos/picos-de-europa.jpg", chain: "", limits: #""limits": {"maxPixels": 786431}"#)
        guard case .failure(let failure) = render.result else { Issue.record("expected a failure"); return }
        #expect(failure.kind == .tooLarge)
        #expect(failure.message == "image is 1024x768 (786432 pixels), over limits.maxPixels 786431")
        #expect(!FileManager.default.fileExists(atPath: render.outputPath))
    }

    @Test("loaders libvips marks untrusted stay blocked, and the failure names the loader and the setting")
    func untrustedLoader() throws {
        let render = try Render("formats/untrusted.ppm", chain: "")
        guard case .failure(let failure) = render.result else { Issue.record("ppm loaded: \(render.result)"); return }
        #expect(failure.kind == .untrustedFormat)
        #expect(failure.message.contains("ppmload") && failure.message.contains("limits.blockUntrusted"), "\(failure.message)")
        #expect(render.probe == nil)
    }

    @Test("quality and options move file size the expected way")
    func encoderOptions() throws {
        let chain = #"{"op": "thumbnail", "width": 300, "height": 300, "fit": "inside"}"#
        let low = try Render("photos/picos-de-europa.jpg", chain: chain, format: #"{"type": "jpeg", "quality": 40}"#, extension: "jpg")
        let high = try Render("photos/picos-de-europa.jpg", chain: chain, format: #"{"type": "jpeg", "quality": 95}"#, extension: "jpg")
        #expect(low.bytes < high.bytes)
        let lossy = try Render("photos/picos-de-europa.jpg", chain: chain, format: #"{"type": "webp", "quality": 60}"#, extension: "webp")
        let lossless = try Render("photos/picos-de-europa.jpg", chain: chain, format: #"{"type": "webp", "lossless": true}"#, extension: "webp")
        #expect(lossy.bytes < lossless.bytes)
        let fast = try Render("photos/picos-de-europa.jpg", chain: chain, format: #"{"type": "png", "compression": 1}"#)
        let small = try Render("photos/picos-de-europa.jpg", chain: chain, format: #"{"type": "png", "compression": 9}"#)
        // PNG is lossless at any compression level: different files, identical pixels.
        #expect(small.bytes != fast.bytes)
        #expect(ImageProbe.meanAbsoluteDifference(small.outputPath, fast.outputPath) == 0)
    }
}
