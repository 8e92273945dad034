import Foundation
import Testing
import TestSupport

private let photo = "formats/photo.png"
private let picos = "photos/picos-de-europa.jpg"
private let small = #"{"op": "resize", "width": 300}"#

/// Reads one output written as JSON; the error's text when the job reader rejects it.
private func readOutput(_ output: String, limits: String = "") -> Result<OutputSpec, JobFileError> {
    Result {
        try Job.parse(text: """
            {"version": 1, "sources": [{"path": "p"}], \(limits.isEmpty ? "" : limits + ",")
             "outputs": [{"name": "t", "path": "o/{stem}.out", "chain": [], \(output)}]}
            """, filePath: "/j/job.json").outputs[0]
    }.mapError { $0 as? JobFileError ?? JobFileError("", "\($0)") }
}

@Suite("Formats: encoder options, auto, metadata, colour and animation")
struct FormatTests {
    // MARK: jpeg

    @Test("jpeg: chroma subsampling, progressive and optimized coding are in the file")
    func jpeg() throws {
        func render(_ options: String) throws -> Render {
            try Render(picos, chain: small, format: #"{"type": "jpeg"\#(options)}"#, extension: "jpg")
        }
        #expect(try render("").probe?.strings["jpeg-chroma-subsample"] == "4:2:0")
        #expect(try render(#", "quality": 95"#).probe?.strings["jpeg-chroma-subsample"] == "4:4:4")
        #expect(try render(#", "chromaSubsampling": "4:4:4""#).probe?.strings["jpeg-chroma-subsample"] == "4:4:4")
        #expect(try render(#", "quality": 95, "chromaSubsampling": "4:2:0""#).probe?.strings["jpeg-chroma-subsample"] == "4:2:0")
        #expect(try render("").probe?.ints["jpeg-multiscan"] == 0)
        #expect(try render(#", "progressive": true"#).probe?.ints["jpeg-multiscan"] == 1)
        let plain = try render("")
        let optimized = try render(#", "optimizeCoding": true"#)
        #expect(optimized.bytes < plain.bytes)
        #expect(ImageProbe.meanAbsoluteDifference(optimized.outputPath, plain.outputPath) == 0)
        let full = try render(#", "chromaSubsampling": "4:4:4""#)
        #expect(full.bytes > plain.bytes)
    }

    @Test("options this libvips build cannot honour, and bad values, are job-file errors", arguments: [
        (#""format": {"type": "jpeg", "trellisQuant": true}"#,
         "outputs[0].format.trellisQuant: is not supported: this libvips build uses libjpeg-turbo, which has no mozjpeg extensions"),
        (#""format": {"type": "jpeg", "optimizeScans": false}"#,
         "outputs[0].format.optimizeScans: is not supported: this libvips build uses libjpeg-turbo, which has no mozjpeg extensions"),
        (#""format": {"type": "jpeg", "chromaSubsampling": "4:2:2"}"#,
         "outputs[0].format.chromaSubsampling: must be one of auto, 4:2:0, 4:4:4, not \"4:2:2\""),
        (#""format": {"type": "png", "dither": 0.5}"#, "outputs[0].format.dither: applies only with \"palette\": true"),
        (#""format": {"type": "png", "palette": true, "colours": 16, "bitdepth": 4}"#, "outputs[0].format.bitdepth: give colours or bitdepth, not both"),
        (#""format": {"type": "png", "bitdepth": 3}"#, "outputs[0].format.bitdepth: must be one of 1, 2, 4, 8, 16"),
        (#""format": {"type": "png", "palette": true, "bitdepth": 16}"#, "outputs[0].format.bitdepth: a palette image has at most 8 bits"),
        (#""format": {"type": "webp", "effort": 7}"#, "outputs[0].format.effort: must be between 0 and 6"),
        (#""format": {"type": "avif", "effort": 10}"#, "outputs[0].format.effort: must be between 0 and 9"),
        (#""format": {"type": "jxl", "effort": 0}"#, "outputs[0].format.effort: must be between 1 and 9"),
        (#""format": {"type": "jxl", "quality": 0}"#, "outputs[0].format.quality: must be between 1 and 100"),
        (#""format": {"type": "tiff", "compression": "lzw", "quality": 50}"#, "outputs[0].format.quality: applies only to jpeg and webp compression"),
        (#""format": {"type": "tiff", "compression": "ccittfax4"}"#,
         "outputs[0].format.compression: must be one of none, jpeg, deflate, packbits, lzw, webp, zstd, not \"ccittfax4\""),
        (#""format": {"type": "gif", "colours": 300}"#, "outputs[0].format.colours: must be between 2 and 256"),
        (#""format": {"type": "auto", "jpeg": {"quality": 0}}"#, "outputs[0].format.jpeg.quality: must be between 1 and 100"),
        (#""format": {"type": "auto", "heic": {}}"#, "outputs[0].format: unknown key \"heic\" (known: avif, gif, jpeg, png, tiff, type, webp)"),
        (#""format": {"type": "bmp"}"#, "outputs[0].format.type: unknown format \"bmp\" (known: auto, avif, gif, jpeg, jxl, png, tiff, webp)"),
        (#""format": {"type": "png"}, "colorspace": "p3""#, "outputs[0].colorspace: must be one of srgb, keep, not \"p3\""),
        (#""format": {"type": "png"}, "keepIcc": "yes""#, "outputs[0].keepIcc: must be true or false, not a string"),
        (#""format": {"type": "gif"}, "frames": 0"#, "outputs[0].frames: must be a positive integer"),
    ])
    func rejected(output: String, message: String) {
        guard case .failure(let error) = readOutput(output) else { Issue.record("accepted: \(output)"); return }
        #expect("\(error)" == message)
    }

    @Test("format identifiers spell out every option; palette colours become a bit depth")
    func identifiers() throws {
        func encoder(_ format: String) throws -> String { try readOutput(#""format": \#(format)"#).get().encoder.identifier }
        #expect(try encoder(#"{"type": "png", "palette": true, "colours": 16}"#) == "png(compression:6,palette:true,bitdepth:4,dither:1)")
        #expect(try encoder(#"{"type": "png", "palette": true, "colours": 200}"#) == (try encoder(#"{"type": "png", "palette": true}"#)))
        #expect(try encoder(#"{"type": "webp"}"#) == "webp(quality:80,lossless:false,nearLossless:false,effort:4,alphaQuality:100,smartSubsample:false)")
        #expect(try encoder(#"{"type": "avif"}"#) == "avif(quality:50,effort:4,lossless:false)")
        #expect(try encoder(#"{"type": "jxl"}"#) == "jxl(quality:75,effort:7,lossless:false)")
        #expect(try encoder(#"{"type": "tiff"}"#) == "tiff(compression:jpeg,quality:80)")
        #expect(try encoder(#"{"type": "tiff", "compression": "lzw"}"#) == "tiff(compression:lzw)")
        #expect(try encoder(#"{"type": "gif", "colours": 4}"#) == "gif(bitdepth:2,dither:1,effort:7)")
        #expect(try encoder(#"{"type": "auto"}"#) == (try encoder(#"{"type": "auto", "jpeg": {"quality": 80}, "gif": {}}"#)))
        #expect(try encoder(#"{"type": "auto"}"#) != (try encoder(#"{"type": "auto", "webp": {"quality": 81}}"#)))
    }

    @Test("metadata and colorspace keys are part of the recipe")
    func recipe() throws {
        let base = try readOutput(#""format": {"type": "jpeg"}"#).get().recipe
        #expect(base.hasSuffix(";autorotate:true;metadata:strip;colorspace:srgb"))
        for extra in [#", "keepMetadata": true"#, #", "keepIcc": true"#, #", "colorspace": "keep""#] {
            #expect(try readOutput(#""format": {"type": "jpeg"}"# + extra).get().recipe != base, "\(extra)")
        }
        #expect(try readOutput(#""format": {"type": "jpeg"}, "keepIcc": false, "colorspace": "srgb""#).get().recipe == base)
    }

    // MARK: png

    @Test("png: palette and bit depths")
    func png() throws {
        let truecolour = try Render(picos, chain: small)
        let palette = try Render(picos, chain: small, format: #"{"type": "png", "palette": true}"#)
        #expect(palette.probe?.paletteBitDepth == 8)
        #expect(palette.bytes < truecolour.bytes / 2, "\(palette.bytes) vs \(truecolour.bytes)")
        let sixteen = try Render(picos, chain: small, format: #"{"type": "png", "palette": true, "colours": 16}"#)
        #expect(sixteen.probe?.paletteBitDepth == 4)
        #expect(sixteen.bytes < palette.bytes)
        let deep = try Render("formats/rgb16.png", chain: "", format: #"{"type": "png", "bitdepth": 16}"#)
        #expect(deep.probe?.bandFormat == "ushort" && deep.probe?.interpretation == "rgb16")
        #expect(ImageProbe.meanAbsoluteDifference(deep.outputPath, Fixtures.path("formats/rgb16.png")) == 0)
        let eight = try Render("formats/rgb16.png", chain: "")
        #expect(eight.probe?.bandFormat == "uchar")
    }

    // MARK: webp, avif, tiff, gif

    @Test("webp: lossless, near-lossless, effort and alpha quality move the size the expected way")
    func webp() throws {
        func render(_ options: String, source: String = picos) throws -> Render {
            try Render(source, chain: small, format: #"{"type": "webp"\#(options)}"#, extension: "webp")
        }
        let lossy = try render("")
        let lossless = try render(#", "lossless": true"#)
        let near = try render(#", "nearLossless": true, "quality": 40"#)
        #expect(lossy.bytes < near.bytes && near.bytes < lossless.bytes, "\(lossy.bytes) \(near.bytes) \(lossless.bytes)")
        #expect(try render(#", "effort": 6"#).bytes < (try render(#", "effort": 0"#)).bytes)
        let alpha = try render("", source: "formats/alpha.png")
        let cheapAlpha = try render(#", "alphaQuality": 10"#, source: "formats/alpha.png")
        #expect(alpha.probe?.hasAlpha == true && cheapAlpha.bytes < alpha.bytes)
    }

    @Test("avif is written by heifsave with AV1; quality and lossless move the size")
    func avif() throws {
        func render(_ options: String, source: String = picos) throws -> Render {
            try Render(source, chain: small, format: #"{"type": "avif"\#(options)}"#, extension: "avif")
        }
        let standard = try render("")
        let probe = try #require(standard.probe, "\(standard.result)")
        #expect(probe.loader == "heifload" && probe.strings["heif-compression"] == "av1")
        #expect(probe.width == 300 && probe.height == 225)
        #expect(try render(#", "quality": 30"#).bytes < (try render(#", "quality": 80"#)).bytes)
        #expect(try render(#", "lossless": true"#).bytes > standard.bytes * 3)
        #expect(try render("", source: "formats/alpha.png").probe?.hasAlpha == true)
    }

    @Test("jxl is written by jxlsave while untrusted loaders are blocked; quality, lossless and alpha as asked")
    func jxl() throws {
        func render(_ options: String, source: String = picos) throws -> Render {
            try Render(source, chain: small, format: #"{"type": "jxl"\#(options)}"#, extension: "jxl")
        }
        func decoded(_ render: Render) throws -> ImageProbe? { try ImageProbe.openUntrusted(render.outputPath) }
        let standard = try render("")
        #expect(try standard.result.get().facts?.mediaType == "image/jxl")
        #expect(ImageSignature.format(ofFile: standard.outputPath) == .jpegXL)
        let probe = try #require(try decoded(standard))
        #expect(probe.width == 300 && probe.height == 225 && probe.bands == 3)
        #expect(try render(#", "quality": 30"#).bytes < (try render(#", "quality": 90"#)).bytes)
        // Lossless: the decoded pixels are exactly the PNG render's.
        let lossless = try render(#", "lossless": true"#)
        let png = try Render(picos, chain: small)
        _ = try decoded(lossless)
        #expect(ImageProbe.meanAbsoluteDifference(lossless.outputPath + ".png", png.outputPath) == 0)
        #expect(lossless.bytes > standard.bytes * 3)
        #expect(try decoded(render("", source: "formats/alpha.png"))?.hasAlpha == true)
    }

    @Test("tiff: one image, compression and quality as asked")
    func tiff() throws {
        func render(_ options: String, source: String = picos) throws -> Render {
            try Render(source, chain: small, format: #"{"type": "tiff"\#(options)}"#, extension: "tif")
        }
        let none = try render(#", "compression": "none""#)
        let probe = try #require(none.probe, "\(none.result)")
        #expect(probe.loader == "tiffload" && probe.pages == 1)
        #expect(none.bytes > 300 * 225 * 3)
        let deflate = try render(#", "compression": "deflate""#)
        #expect(deflate.bytes < none.bytes)
        #expect(ImageProbe.meanAbsoluteDifference(deflate.outputPath, none.outputPath) == 0)
        #expect(try render(#", "quality": 40"#).bytes < (try render(#", "quality": 90"#)).bytes)
        #expect(try render(#", "compression": "lzw""#, source: "formats/alpha.png").probe?.hasAlpha == true)
        // JPEG compression has no alpha: flattened onto white like a JPEG file, not dropped.
        let flattened = try render("", source: "formats/alpha.png")
        #expect(flattened.probe?.bands == 3)
        #expect(ImageProbe.pixel(flattened.outputPath, x: 1, y: 224)?.allSatisfy { $0 > 240 } == true)
    }

    @Test("gif: cgif writes a palette of 2^bitdepth colours")
    func gif() throws {
        let full = try Render(picos, chain: small, format: #"{"type": "gif"}"#, extension: "gif")
        let probe = try #require(full.probe, "\(full.result)")
        #expect(probe.loader == "gifload" && probe.width == 300)
        let four = try Render(picos, chain: small, format: #"{"type": "gif", "colours": 4}"#, extension: "gif")
        #expect(four.bytes < full.bytes / 2)
        #expect(ImageProbe.meanAbsoluteDifference(four.outputPath, full.outputPath) ?? 0 > 3)
    }

    // MARK: auto

    @Test("auto keeps the source's format when runner writes it, else jpeg (png with alpha)", arguments: [
        ("formats/photo.jpg", "jpegload"), ("formats/photo.png", "pngload"), ("formats/photo.webp", "webpload"),
        ("formats/photo.gif", "gifload"), ("formats/photo.tif", "tiffload"), ("formats/photo.avif", "heifload"),
        ("formats/photo.heic", "jpegload"), ("formats/alpha.png", "pngload"),
    ])
    func auto(source: String, loader: String) throws {
        let render = try Render(source, chain: "", format: #"{"type": "auto"}"#, extension: "out")
        let probe = try #require(render.probe, "\(source): \(render.result)")
        #expect(probe.loader == loader, "\(source)")
        if source.hasSuffix(".avif") { #expect(probe.strings["heif-compression"] == "av1") }
    }

    @Test("auto: a source runner cannot write that gains alpha becomes png; nested options apply")
    func autoFallbackAndOptions() throws {
        let rounded = try Render("formats/photo.heic", chain: #"{"op": "roundCorners", "radius": 20}"#, format: #"{"type": "auto"}"#, extension: "out")
        #expect(rounded.probe?.loader == "pngload" && rounded.probe?.hasAlpha == true)
        let standard = try Render(picos, chain: small, format: #"{"type": "auto"}"#, extension: "out")
        let low = try Render(picos, chain: small, format: #"{"type": "auto", "jpeg": {"quality": 30}}"#, extension: "out")
        #expect(low.probe?.loader == "jpegload" && low.bytes < standard.bytes)
    }

    // MARK: animation

    @Test("animated GIF and WebP keep every frame, delays and loop; each frame goes through the chain", arguments: [
        ("formats/animated.gif", "gif"), ("formats/animated.webp", "webp"), ("formats/animated.gif", "webp"),
    ])
    func animated(source: String, type: String) throws {
        // 160x120 frames; rotate and pad change each frame's geometry.
        let render = try Render(source, chain: #"{"op": "rotate", "angle": 90}, {"op": "pad", "bottom": 10}"#,
                                format: #"{"type": "\#(type)"}"#, extension: type)
        let probe = try #require(render.probe, "\(render.result)")
        #expect(probe.pages == 6, "\(source) → \(type): \(probe.pages) frames")
        #expect(probe.width == 120 && probe.pageHeight == 170 && probe.height == 170)
        #expect(probe.delays == [200, 200, 200, 200, 200, 400])
        #expect(probe.ints["loop"] == 0)
        #expect(try render.result.get().height == 6 * 170)
    }

    @Test("auto keeps an animated GIF animated; a format that cannot animate gets the first frame")
    func animatedElsewhere() throws {
        let auto = try Render("formats/animated.gif", chain: "", format: #"{"type": "auto"}"#, extension: "gif")
        #expect(auto.probe?.loader == "gifload" && auto.probe?.pages == 6)
        let still = try Render("formats/animated.gif", chain: #"{"op": "thumbnail", "width": 80, "height": 80, "fit": "inside"}"#)
        #expect(still.probe?.pages == 1 && still.probe?.width == 80 && still.probe?.height == 60)
        // The still is the animation's first frame, pixel for pixel.
        let first = try Render("formats/animated.gif", chain: "")
        #expect(first.probe?.height == 120)
        #expect(ImageProbe.meanAbsoluteDifference(first.outputPath, Fixtures.path("formats/animated.gif")) == 0)
    }

    @Test("the frames limit fails the item as too large", arguments: [
        (#", "frames": 5"#, ""), ("", #""limits": {"frames": 5}"#),
    ])
    func frameLimit(output: String, limits: String) throws {
        let render = try Render("formats/animated.gif", chain: "", format: #"{"type": "gif"}"#, extension: "gif",
                                output: output, limits: limits)
        guard case .failure(let failure) = render.result else { Issue.record("not limited: \(render.result)"); return }
        #expect(failure.kind == .tooLarge)
        #expect(failure.message == "image has 6 frames, over the frames limit 5")
        let allowed = try Render("formats/animated.gif", chain: "", format: #"{"type": "gif"}"#, extension: "gif", output: #", "frames": 6"#)
        #expect(allowed.probe?.pages == 6)
    }

    // MARK: metadata and colour

    @Test("metadata is stripped by default; keepMetadata keeps EXIF (the photo's artist and copyright), on both decode paths")
    func keepMetadata() throws {
        for chain in [small, #"{"op": "thumbnail", "width": 300, "height": 300, "fit": "inside"}"#] {
            let stripped = try Render(picos, chain: chain, format: #"{"type": "jpeg"}"#, extension: "jpg")
            #expect(stripped.probe?.fields.contains { $0.hasPrefix("exif-") } == false, "\(chain)")
            for (type, fileExtension) in [("jpeg", "jpg"), ("webp", "webp"), ("png", "png")] {
                let kept = try Render(picos, chain: chain, format: #"{"type": "\#(type)"}"#, extension: fileExtension,
                                      output: #", "keepMetadata": true"#)
                #expect(kept.probe?.strings["exif-ifd0-Artist"]?.hasPrefix("Aitzol Berasategi") == true, "\(type), \(chain)")
                #expect(kept.probe?.fields.contains("exif-ifd0-Copyright") == true, "\(type), \(chain)")
            }
            let icc = try Render(picos, chain: chain, format: #"{"type": "jpeg"}"#, extension: "jpg", output: #", "keepIcc": true"#)
            #expect(icc.probe?.fields.contains("exif-ifd0-Artist") == false, "\(chain)")
        }
    }

    @Test("kept EXIF no longer says to rotate pixels that were already rotated")
    func keptOrientation() throws {
        let render = try Render("orientation/orient-6.jpg", chain: "", format: #"{"type": "jpeg"}"#, extension: "jpg", output: #", "keepMetadata": true"#)
        let probe = try #require(render.probe)
        #expect(probe.width == 300 && probe.height == 200)
        #expect((probe.ints["orientation"] ?? 1) == 1)
    }

    @Test("keepIcc keeps the profile; colorspace keep keeps the source's own pixel values")
    func keepIcc() throws {
        let adobe = Fixtures.path("formats/adobergb.jpg")
        #expect(ImageProbe.open(adobe)?.iccProfileBytes == 580)
        let stripped = try Render("formats/adobergb.jpg", chain: "")
        #expect(stripped.probe?.iccProfileBytes == 0)
        for chain in ["", #"{"op": "thumbnail", "width": 400, "height": 400, "fit": "inside"}"#] {
            // Converted to sRGB and tagged with libvips' own sRGB profile.
            let srgb = try Render("formats/adobergb.jpg", chain: chain, output: #", "keepIcc": true"#)
            let probe = try #require(srgb.probe, "\(srgb.result)")
            #expect(probe.iccProfileBytes > 0 && probe.iccProfileBytes != 580, "\(chain): \(probe.iccProfileBytes)")
            #expect(ImageProbe.meanAbsoluteDifference(srgb.outputPath, adobe) ?? 0 > 0.5, "\(chain)")
            // Left as Adobe RGB values (lossless PNG: exactly the decoded source) with the Adobe profile.
            let kept = try Render("formats/adobergb.jpg", chain: chain, output: #", "keepIcc": true, "colorspace": "keep""#)
            #expect(kept.probe?.iccProfileBytes == 580, "\(chain)")
            #expect(ImageProbe.meanAbsoluteDifference(kept.outputPath, adobe) == 0, "\(chain)")
        }
    }

    @Test("colorspace keep still turns CMYK into sRGB")
    func keepCMYK() throws {
        let render = try Render("formats/cmyk.jpg", chain: small, format: #"{"type": "png"}"#, output: #", "colorspace": "keep""#)
        let probe = try #require(render.probe, "\(render.result)")
        #expect(probe.bands == 3 && probe.interpretation == "srgb")
    }
}
