import Foundation
import Testing
import TestSupport

/// Runs libvips' own CLI on a fixture into `workspace` and returns the output's path.
private func reference(_ workspace: Workspace, _ name: String, _ tool: String, _ arguments: (String) -> [String]) throws -> String {
    let path = workspace.path(name)
    try VipsCLI.run(tool, arguments(path))
    return path
}

/// The chain's identifier, as the job reader builds it.
private func identifier(_ steps: String) throws -> String {
    try Job.parse(text: """
        {"version": 1, "sources": [{"path": "p"}],
         "outputs": [{"name": "t", "path": "o/{stem}.png", "chain": [\(steps)], "format": {"type": "png"}}]}
        """, filePath: Fixtures.path("job.json")).outputs[0].chain.identifier
}

private func close(_ left: [Double]?, _ right: [Double], within tolerance: Double = 2) -> Bool {
    guard let left, left.count == right.count else { return false }
    return zip(left, right).allSatisfy { abs($0 - $1) <= tolerance }
}

// fixtures/photos/picos-de-europa.jpg is 1024x768; fixtures/formats/photo.png is 400x300 (lossless,
// so comparisons with the vips CLI are exact up to resampling); alpha.png is photo.png with alpha
// 0 in the corners.
private let picos = "photos/picos-de-europa.jpg"
private let photo = "formats/photo.png"

@Suite("Catalogue: every chain op, checked on libvips output")
struct CatalogueTests {
    // MARK: resize

    @Test("resize fits a 1024x768 image to a 100x100 box", arguments: [
        ("cover", 100, 100), ("contain", 100, 100), ("fill", 100, 100), ("inside", 100, 75), ("outside", 133, 100),
    ])
    func resizeFits(fit: String, width: Int, height: Int) throws {
        let render = try Render(picos, chain: #"{"op": "resize", "width": 100, "height": 100, "fit": "\#(fit)"}"#)
        let probe = try #require(render.probe, "\(render.result)")
        #expect(probe.width == width && probe.height == height)
    }

    @Test("resize: one side scales the other; never enlarges unless asked")
    func resizeSides() throws {
        let wide = try Render(picos, chain: #"{"op": "resize", "width": 512}"#)
        #expect(wide.probe?.width == 512 && wide.probe?.height == 384)
        let kept = try Render(photo, chain: #"{"op": "resize", "width": 800, "height": 800, "fit": "inside"}"#)
        #expect(kept.probe?.width == 400 && kept.probe?.height == 300)
        let grown = try Render(photo, chain: #"{"op": "resize", "width": 800, "height": 800, "fit": "inside", "enlarge": true}"#)
        #expect(grown.probe?.width == 800 && grown.probe?.height == 600)
        // fill without enlarge shrinks the side that is too big and leaves the other.
        let stretched = try Render(photo, chain: #"{"op": "resize", "width": 200, "height": 600, "fit": "fill"}"#)
        #expect(stretched.probe?.width == 200 && stretched.probe?.height == 300)
    }

    @Test("resize cover crops where position says, as vips resize + crop does", arguments: [
        ("west", 0), ("centre", 16), ("east", 33),
    ])
    func resizeCoverPosition(position: String, left: Int) throws {
        let render = try Render(picos, chain: #"{"op": "resize", "width": 100, "height": 100, "position": "\#(position)"}"#)
        let resized = try reference(render.workspace, "resized.v", "vips") {
            ["resize", Fixtures.path(picos), $0, "\(133.0 / 1024)", "--vscale", "\(100.0 / 768)"]
        }
        let expected = try reference(render.workspace, "expected.png", "vips") { ["crop", resized, $0, "\(left)", "0", "100", "100"] }
        let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, expected))
        #expect(difference < 0.5, "\(position): differs by \(difference)")
    }

    @Test("resize contain pads at position with the background", arguments: [("north", 90, 10), ("south", 10, 90)])
    func resizeContainPosition(position: String, paddedRow: Int, pictureRow: Int) throws {
        let render = try Render(picos, chain: ##"{"op": "resize", "width": 100, "height": 100, "fit": "contain", "position": "\##(position)", "background": "#00ff00"}"##)
        #expect(ImageProbe.pixel(render.outputPath, x: 50, y: paddedRow) == [0, 255, 0])
        #expect(ImageProbe.pixel(render.outputPath, x: 50, y: pictureRow) != [0, 255, 0])
    }

    @Test("resize fill and kernels match vips resize", arguments: ["nearest", "linear", "cubic", "lanczos3"])
    func resizeMatchesCLI(kernel: String) throws {
        let render = try Render(photo, chain: #"{"op": "resize", "width": 250, "height": 100, "fit": "fill", "kernel": "\#(kernel)"}"#)
        let expected = try reference(render.workspace, "expected.png", "vips") {
            ["resize", Fixtures.path(photo), $0, "\(250.0 / 400)", "--vscale", "\(100.0 / 300)", "--kernel", kernel]
        }
        #expect(render.probe?.width == 250 && render.probe?.height == 100)
        let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, expected))
        #expect(difference < 0.5, "\(kernel): differs by \(difference)")
    }

    @Test("thumbnail matches vipsthumbnail")
    func thumbnailMatchesCLI() throws {
        let render = try Render(picos, chain: #"{"op": "thumbnail", "width": 200, "height": 200, "fit": "inside"}"#)
        let expected = try reference(render.workspace, "thumb.png", "vipsthumbnail") { [Fixtures.path(picos), "-s", "200x200", "-o", $0] }
        #expect(render.probe?.width == ImageProbe.open(expected)?.width && render.probe?.height == ImageProbe.open(expected)?.height)
        let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, expected))
        #expect(difference < 1.5, "differs by \(difference)")
    }

    // MARK: crop, rotate, flip

    @Test("trim removes a uniform border, by the corner's colour or a given one")
    func trim() throws {
        for trim in [#"{"op": "crop", "trim": true}"#, ##"{"op": "crop", "trim": true, "background": "#f00", "threshold": 20}"##] {
            let render = try Render(photo, chain: ##"{"op": "pad", "top": 20, "right": 10, "bottom": 5, "left": 30, "background": "#ff0000"}, "## + trim)
            let probe = try #require(render.probe, "\(render.result)")
            #expect(probe.width == 400 && probe.height == 300, "\(trim): \(probe.width)x\(probe.height)")
            #expect(ImageProbe.meanAbsoluteDifference(render.outputPath, Fixtures.path(photo)) == 0)
        }
    }

    @Test("trim keeps an image that is all background")
    func trimFlat() throws {
        let render = try Render(photo, chain: ##"{"op": "tint", "colour": "#336699"}, {"op": "crop", "trim": true}"##)
        #expect(render.probe?.width == 400 && render.probe?.height == 300, "\(render.result)")
    }

    @Test("rotate: right angles are lossless like vips rot; others match vips rotate")
    func rotate() throws {
        let right = try Render(photo, chain: #"{"op": "rotate", "angle": -270}"#)
        let rotated = try reference(right.workspace, "rot.png", "vips") { ["rot", Fixtures.path(photo), $0, "d90"] }
        #expect(ImageProbe.meanAbsoluteDifference(right.outputPath, rotated) == 0)
        let any = try Render(photo, chain: #"{"op": "rotate", "angle": 30}"#)
        let expected = try reference(any.workspace, "rotate.png", "vips") { ["rotate", Fixtures.path(photo), $0, "30"] }
        let probe = try #require(any.probe)
        #expect(probe.width == ImageProbe.open(expected)?.width && probe.height == ImageProbe.open(expected)?.height)
        let difference = try #require(ImageProbe.meanAbsoluteDifference(any.outputPath, expected))
        #expect(difference < 0.5, "differs by \(difference)")
        // A translucent background gives the image alpha; the new corners are clear.
        let clear = try Render(photo, chain: ##"{"op": "rotate", "angle": 45, "background": "#00000000"}"##)
        #expect(clear.probe?.hasAlpha == true)
        #expect(ImageProbe.pixel(clear.outputPath, x: 0, y: 0)?.last == 0)
    }

    @Test("flip matches vips flip", arguments: ["horizontal", "vertical"])
    func flip(direction: String) throws {
        let render = try Render(photo, chain: #"{"op": "flip", "direction": "\#(direction)"}"#)
        let expected = try reference(render.workspace, "flip.png", "vips") { ["flip", Fixtures.path(photo), $0, direction] }
        #expect(ImageProbe.meanAbsoluteDifference(render.outputPath, expected) == 0)
        #expect(ImageProbe.meanAbsoluteDifference(render.outputPath, Fixtures.path(photo)) ?? 0 > 1)
    }

    // MARK: filters

    @Test("blur, sharpen, gamma and grayscale match the vips CLI")
    func filtersMatchCLI() throws {
        let cases: [(chain: String, arguments: (String) -> [String])] = [
            (#"{"op": "blur", "sigma": 4}"#, { ["gaussblur", Fixtures.path(photo), $0, "4"] }),
            (#"{"op": "sharpen", "sigma": 1, "m2": 4}"#, { ["sharpen", Fixtures.path(photo), $0, "--sigma", "1", "--m2", "4"] }),
            (#"{"op": "gamma"}"#, { ["gamma", Fixtures.path(photo), $0, "--exponent", "2.2"] }),
            (#"{"op": "grayscale"}"#, { ["colourspace", Fixtures.path(photo), $0, "b-w"] }),
        ]
        for (chain, arguments) in cases {
            let render = try Render(photo, chain: chain)
            let expected = try reference(render.workspace, "expected.png", "vips", arguments)
            let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, expected), "\(chain): \(render.result)")
            #expect(difference < 0.6, "\(chain) differs by \(difference)")
        }
    }

    @Test("gamma above 1 brightens and keeps alpha; grayscale gives equal bands in an RGB format")
    func gammaAndGrey() throws {
        let original = try #require(ImageProbe.open(Fixtures.path("formats/alpha.png")))
        let gamma = try #require(try Render("formats/alpha.png", chain: #"{"op": "gamma", "exponent": 2}"#).probe)
        #expect(gamma.bandAverages[0] > original.bandAverages[0] + 10)
        #expect(gamma.bandAverages[3] == original.bandAverages[3])
        let grey = try #require(try Render(photo, chain: #"{"op": "grayscale"}"#, format: #"{"type": "webp", "lossless": true}"#, extension: "webp").probe)
        #expect(grey.bands == 3)
        #expect(grey.bandAverages.max()! - grey.bandAverages.min()! < 0.01, "\(grey.bandAverages)")
    }

    // MARK: colour

    @Test("tint lays the colour over the image by its alpha")
    func tint() throws {
        let original = try #require(ImageProbe.open(Fixtures.path(photo)))
        let render = try Render(photo, chain: ##"{"op": "tint", "colour": "#ff000080"}"##)
        let tinted = try #require(render.probe)
        #expect(tinted.bandAverages[0] > original.bandAverages[0] + 20)
        #expect(tinted.bandAverages[1] < original.bandAverages[1] - 20 && tinted.bandAverages[2] < original.bandAverages[2] - 20)
        // (153, 149, 146) at the centre; the colour's alpha is 128/255.
        let a = 128.0 / 255
        #expect(close(ImageProbe.pixel(render.outputPath, x: 200, y: 150), [255 * a + 153 * (1 - a), 149 * (1 - a), 146 * (1 - a)]))
        let solid = try Render(photo, chain: ##"{"op": "tint", "colour": "#0000ff"}"##)
        #expect(solid.probe?.bandAverages == [0, 0, 255])
    }

    @Test("overlay covers with the colour at opacity, only where the image is")
    func overlay() throws {
        let render = try Render("formats/alpha.png", chain: ##"{"op": "overlay", "colour": "#0000ff", "opacity": 0.25}"##)
        #expect(close(ImageProbe.pixel(render.outputPath, x: 200, y: 150), [153 * 0.75, 149 * 0.75, 146 * 0.75 + 255 * 0.25, 255]))
        #expect(ImageProbe.pixel(render.outputPath, x: 0, y: 0)?.last == 0)
        let opaque = try Render(photo, chain: ##"{"op": "overlay", "colour": "#0000ff"}"##)
        #expect(opaque.probe?.bands == 3)
    }

    @Test("colorControls: saturation 0 is grey, brightness adds, contrast scales around mid-grey")
    func colorControls() throws {
        let grey = try Render(photo, chain: #"{"op": "colorControls", "saturation": 0}"#)
        let luma = (0.2126 * 153 + 0.7152 * 149 + 0.0722 * 146)
        #expect(close(ImageProbe.pixel(grey.outputPath, x: 200, y: 150), [luma, luma, luma], within: 1))
        let adjusted = try Render(photo, chain: #"{"op": "colorControls", "brightness": 0.1, "contrast": 1.5}"#)
        let expected = [153.0, 149, 146].map { ($0 / 255 + 0.1 - 0.5) * 1.5 * 255 + 127.5 }
        #expect(close(ImageProbe.pixel(adjusted.outputPath, x: 200, y: 150), expected, within: 1))
        let unchanged = try Render(photo, chain: #"{"op": "colorControls"}"#)
        #expect(ImageProbe.meanAbsoluteDifference(unchanged.outputPath, Fixtures.path(photo)) == 0)
    }

    @Test("flatten lays alpha on the background, like vips flatten")
    func flatten() throws {
        let render = try Render("formats/alpha.png", chain: ##"{"op": "flatten", "background": "#ff0000"}"##)
        let probe = try #require(render.probe)
        #expect(probe.bands == 3 && !probe.hasAlpha)
        #expect(ImageProbe.pixel(render.outputPath, x: 0, y: 0) == [255, 0, 0])
        let expected = try reference(render.workspace, "flat.png", "vips") {
            ["flatten", Fixtures.path("formats/alpha.png"), $0, "--background", "255 0 0"]
        }
        #expect(ImageProbe.meanAbsoluteDifference(render.outputPath, expected) ?? 1 < 0.01)
    }

    // MARK: shape

    @Test("roundCorners adds alpha that is zero at the rounded corners only")
    func roundCorners() throws {
        let all = try Render(photo, chain: #"{"op": "roundCorners", "radius": 40}"#)
        let probe = try #require(all.probe, "\(all.result)")
        #expect(probe.bands == 4 && probe.width == 400 && probe.height == 300)
        for (x, y) in [(0, 0), (399, 0), (0, 299), (399, 299), (5, 5)] {
            #expect(ImageProbe.pixel(all.outputPath, x: x, y: y)?.last == 0, "(\(x), \(y))")
        }
        for (x, y) in [(200, 150), (40, 0), (0, 40), (20, 20)] {
            #expect(ImageProbe.pixel(all.outputPath, x: x, y: y)?.last == 255, "(\(x), \(y))")
        }
        // An edge pixel of the quarter circle is partly covered (antialiased).
        let edge = try #require(ImageProbe.pixel(all.outputPath, x: 11, y: 11)?.last)
        #expect(edge > 0 && edge < 255, "\(edge)")
        let some = try Render(photo, chain: #"{"op": "roundCorners", "radius": 40, "corners": ["bottomRight", "topLeft"]}"#)
        #expect(ImageProbe.pixel(some.outputPath, x: 0, y: 0)?.last == 0)
        #expect(ImageProbe.pixel(some.outputPath, x: 399, y: 299)?.last == 0)
        #expect(ImageProbe.pixel(some.outputPath, x: 399, y: 0)?.last == 255)
        #expect(ImageProbe.pixel(some.outputPath, x: 0, y: 299)?.last == 255)
    }

    @Test("roundCorners keeps an existing alpha's transparency")
    func roundCornersOnAlpha() throws {
        // The left half of alpha.png's opaque disc: transparent at the left edge, opaque at the top right.
        let render = try Render("formats/alpha.png", chain: #"{"op": "crop", "x": 0, "y": 60, "width": 200, "height": 180}, {"op": "roundCorners", "radius": 60}"#)
        #expect(render.probe?.bands == 4)
        #expect(ImageProbe.pixel(Fixtures.path("formats/alpha.png"), x: 199, y: 60)?.last == 255)
        #expect(ImageProbe.pixel(render.outputPath, x: 199, y: 0)?.last == 0)
        #expect(ImageProbe.pixel(render.outputPath, x: 0, y: 90)?.last == 0)
        #expect(ImageProbe.pixel(render.outputPath, x: 150, y: 90)?.last == 255)
    }

    @Test("border paints the edges and keeps the size")
    func border() throws {
        let render = try Render(photo, chain: ##"{"op": "border", "width": 6, "colour": "#00ff00"}"##)
        let probe = try #require(render.probe, "\(render.result)")
        #expect(probe.width == 400 && probe.height == 300 && probe.bands == 3)
        for (x, y) in [(0, 0), (5, 150), (394, 150), (200, 294), (399, 299)] {
            #expect(ImageProbe.pixel(render.outputPath, x: x, y: y) == [0, 255, 0], "(\(x), \(y))")
        }
        #expect(ImageProbe.pixel(render.outputPath, x: 6, y: 6) == ImageProbe.pixel(Fixtures.path(photo), x: 6, y: 6))
        #expect(ImageProbe.pixel(render.outputPath, x: 200, y: 150) == [153, 149, 146])
    }

    @Test("pad by margins and to a size at a gravity match vips embed")
    func pad() throws {
        let margins = try Render(photo, chain: ##"{"op": "pad", "top": 10, "left": 30, "bottom": 5, "background": "#ff0000"}"##)
        let expected = try reference(margins.workspace, "embed.png", "vips") {
            ["embed", Fixtures.path(photo), $0, "30", "10", "430", "315", "--extend", "background", "--background", "255 0 0"]
        }
        #expect(margins.probe?.width == 430 && margins.probe?.height == 315)
        #expect(ImageProbe.meanAbsoluteDifference(margins.outputPath, expected) == 0)
        let sized = try Render(photo, chain: ##"{"op": "pad", "width": 500, "height": 300, "gravity": "east", "background": "#ff000080"}"##)
        let probe = try #require(sized.probe)
        #expect(probe.width == 500 && probe.height == 300 && probe.hasAlpha)
        #expect(ImageProbe.pixel(sized.outputPath, x: 50, y: 150) == [255, 0, 0, 128])
        #expect(ImageProbe.pixel(sized.outputPath, x: 300, y: 150) == [153, 149, 146, 255])
    }

    // MARK: composite

    @Test("composite puts the watermark where gravity and offsets say, like vips composite2")
    func composite() throws {
        let render = try Render(photo, chain: #"{"op": "watermark", "image": "watermark.png", "gravity": "southeast", "offsetX": -10, "offsetY": -20}"#,
                                files: ["watermark.png"])
        // 400x300 base, 64x64 watermark: southeast is (336, 236), moved by the offsets.
        let composed = try reference(render.workspace, "composite.png", "vips") {
            ["composite2", Fixtures.path(photo), Fixtures.path("watermark.png"), $0, "over", "--x", "326", "--y", "216"]
        }
        // vips composite2 always adds alpha; over an opaque base it is 255 everywhere, and runner drops it.
        let expected = try reference(render.workspace, "expected.png", "vips") { ["extract_band", composed, $0, "0", "--n", "3"] }
        let probe = try #require(render.probe, "\(render.result)")
        #expect(probe.bands == 3 && probe.width == 400)
        let difference = try #require(ImageProbe.meanAbsoluteDifference(render.outputPath, expected))
        #expect(difference < 0.01, "differs by \(difference)")
        // The badge's blue ring (30, 60, 160 at alpha 216) 24 pixels above its centre.
        let ring = try #require(ImageProbe.pixel(render.outputPath, x: 326 + 32, y: 216 + 8))
        #expect(ring[2] > ring[0] + 60, "\(ring)")
        #expect(ImageProbe.pixel(render.outputPath, x: 100, y: 100) == ImageProbe.pixel(Fixtures.path(photo), x: 100, y: 100))
    }

    @Test("composite opacity, scale and blend modes")
    func compositeOptions() throws {
        let full = try Render(photo, chain: #"{"op": "composite", "image": "watermark.png"}"#, files: ["watermark.png"])
        let half = try Render(photo, chain: #"{"op": "composite", "image": "watermark.png", "opacity": 0.5}"#, files: ["watermark.png"])
        let fullChange = try #require(ImageProbe.meanAbsoluteDifference(full.outputPath, Fixtures.path(photo)))
        let halfChange = try #require(ImageProbe.meanAbsoluteDifference(half.outputPath, Fixtures.path(photo)))
        #expect(halfChange > fullChange * 0.35 && halfChange < fullChange * 0.65, "\(halfChange) vs \(fullChange)")
        // scale 0.5 of a 400-pixel base: a 200-pixel badge, so its ring reaches far from the centre.
        let scaled = try Render(photo, chain: #"{"op": "composite", "image": "watermark.png", "scale": 0.5}"#, files: ["watermark.png"])
        let ring = try #require(ImageProbe.pixel(scaled.outputPath, x: 200, y: 150 - 75))
        #expect(ring[2] > ring[0] + 60, "\(ring)")
        let multiplied = try Render(photo, chain: #"{"op": "composite", "image": "watermark.png", "blend": "multiply"}"#, files: ["watermark.png"])
        let composed = try reference(multiplied.workspace, "multiply.png", "vips") {
            ["composite2", Fixtures.path(photo), Fixtures.path("watermark.png"), $0, "multiply", "--x", "168", "--y", "118"]
        }
        let expected = try reference(multiplied.workspace, "expected.png", "vips") { ["extract_band", composed, $0, "0", "--n", "3"] }
        #expect(ImageProbe.meanAbsoluteDifference(multiplied.outputPath, expected) ?? 1 < 0.01)
        #expect(ImageProbe.meanAbsoluteDifference(multiplied.outputPath, full.outputPath) ?? 0 > 0.1)
    }

    @Test("the watermark's content is part of the identifier; a missing file is a job-file error")
    func compositeIdentity() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["watermark.png"], to: "marks")
        func chain(_ step: String) throws -> String {
            try Job.parse(text: """
                {"version": 1, "sources": [{"path": "p"}],
                 "outputs": [{"name": "t", "path": "o/{stem}.png", "chain": [\(step)], "format": {"type": "png"}}]}
                """, filePath: workspace.path("job.json")).outputs[0].chain.identifier
        }
        let before = try chain(#"{"op": "watermark", "image": "marks/watermark.png"}"#)
        #expect(before == (try chain(#"{"op": "composite", "image": "./marks/../marks/watermark.png", "opacity": 1.0, "blend": "over"}"#)))
        #expect(before.hasPrefix("composite(image:") && before.hasSuffix(",gravity:centre,offsetX:0,offsetY:0,opacity:1,blend:over,scale:none)"))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: workspace.path("marks/watermark.png")))
        bytes.append(0)
        try bytes.write(to: URL(fileURLWithPath: workspace.path("marks/watermark.png")))
        #expect(try chain(#"{"op": "watermark", "image": "marks/watermark.png"}"#) != before)
        #expect(throws: JobFileError.self) { try chain(#"{"op": "watermark", "image": "marks/missing.png"}"#) }
        do {
            _ = try chain(#"{"op": "watermark", "image": "marks/missing.png"}"#)
        } catch {
            #expect("\(error)" == "outputs[0].chain[0].image: cannot read \(workspace.root)/marks/missing.png: No such file or directory")
        }
    }

    @Test("an overlay file of 16 MiB is read (its content in the identifier); one byte more is a job-file error naming its size and the limit")
    func compositeImageAtTheLimit() throws {
        let workspace = try Workspace()
        for (name, size) in [("at.png", 16 << 20), ("over.png", (16 << 20) + 1)] {
            #expect(FileManager.default.createFile(atPath: workspace.path(name), contents: nil))
            #expect(truncate(workspace.path(name), off_t(size)) == 0)
        }
        func chain(_ image: String) throws -> String {
            try Job.parse(text: """
                {"version": 1, "sources": [{"path": "p"}],
                 "outputs": [{"name": "t", "path": "o/{stem}.png", "chain": [{"op": "watermark", "image": "\(image)"}], "format": {"type": "png"}}]}
                """, filePath: workspace.path("job.json")).outputs[0].chain.identifier
        }
        #expect(try chain("at.png").hasPrefix("composite(image:"))
        #expect(throws: JobFileError("outputs[0].chain[0].image", "cannot read \(workspace.path("over.png")): it is 16777217 bytes, over the limit of 16 MiB")) {
            try chain("over.png")
        }
    }

    // MARK: identifiers and validation

    @Test("identifiers: defaults filled in, numbers and colours canonical, different ops different")
    func identifiers() throws {
        let equal: [(String, String)] = [
            (#"{"op": "resize", "width": 100, "height": 50}"#,
             ##"{"op": "resize", "width": 100.0, "height": 50, "fit": "cover", "position": "centre", "enlarge": false, "kernel": "lanczos3", "background": "#fff"}"##),
            (#"{"op": "resize", "width": 100, "fit": "cover"}"#, #"{"op": "resize", "width": 100, "fit": "inside"}"#),
            (#"{"op": "rotate", "angle": -90}"#, #"{"op": "rotate", "angle": 630}"#),
            (##"{"op": "rotate", "angle": 90, "background": "#fff"}"##, #"{"op": "rotate", "angle": 90}"#),
            (#"{"op": "gamma"}"#, #"{"op": "gamma", "exponent": 2.20}"#),
            (##"{"op": "tint", "colour": "#F00"}"##, ##"{"op": "tint", "colour": "#ff0000ff"}"##),
            (#"{"op": "colorControls"}"#, #"{"op": "colorControls", "brightness": 0, "contrast": 1, "saturation": 1.0}"#),
            (#"{"op": "roundCorners", "radius": 8}"#, #"{"op": "roundCorners", "radius": 8, "corners": ["bottomRight", "topLeft", "topRight", "bottomLeft", "topLeft"]}"#),
            (#"{"op": "border", "width": 2}"#, ##"{"op": "border", "width": 2, "colour": "#000"}"##),
            (#"{"op": "pad", "top": 4}"#, ##"{"op": "pad", "top": 4, "right": 0, "bottom": 0, "left": 0, "background": "#000000ff"}"##),
            (#"{"op": "flatten"}"#, ##"{"op": "flatten", "background": "#FFFFFF"}"##),
            (#"{"op": "crop", "trim": true}"#, #"{"op": "crop", "trim": true, "threshold": 10.0}"#),
            (##"{"op": "overlay", "colour": "#000"}"##, ##"{"op": "overlay", "colour": "#000", "opacity": 0.5}"##),
        ]
        for (left, right) in equal {
            #expect(try identifier(left) == identifier(right), "\(left) vs \(right)")
        }
        let different: [(String, String)] = [
            (#"{"op": "blur", "sigma": 1}"#, #"{"op": "blur", "sigma": 1.5}"#),
            (#"{"op": "resize", "width": 100, "height": 50}"#, #"{"op": "resize", "width": 100, "height": 50, "kernel": "cubic"}"#),
            (#"{"op": "resize", "width": 100, "height": 50, "fit": "contain"}"#, ##"{"op": "resize", "width": 100, "height": 50, "fit": "contain", "background": "#fff"}"##),
            (#"{"op": "rotate", "angle": 30}"#, ##"{"op": "rotate", "angle": 30, "background": "#fff"}"##),
            (#"{"op": "flip", "direction": "horizontal"}"#, #"{"op": "flip", "direction": "vertical"}"#),
            (#"{"op": "roundCorners", "radius": 8}"#, #"{"op": "roundCorners", "radius": 8, "corners": ["topLeft"]}"#),
            (#"{"op": "pad", "width": 10}"#, #"{"op": "pad", "width": 10, "gravity": "west"}"#),
            (#"{"op": "crop", "trim": true}"#, ##"{"op": "crop", "trim": true, "background": "#ffffff"}"##),
        ]
        for (left, right) in different {
            #expect(try identifier(left) != identifier(right), "\(left) vs \(right)")
        }
        #expect(try identifier(#"{"op": "resize", "width": 100}"#)
            == "resize(width:100,height:auto,fit:inside,enlarge:false,kernel:lanczos3)")
        #expect(try identifier(#"{"op": "rotate", "angle": 30.5}"#) == "rotate(angle:30.5,background:#000000ff)")
        #expect(try identifier(#"{"op": "roundCorners", "radius": 8, "corners": ["bottomRight", "topLeft"]}"#)
            == "roundCorners(radius:8,corners:topLeft+bottomRight)")
    }

    @Test("every parameter is validated with its exact location", arguments: [
        (#"{"op": "resize"}"#, "outputs[0].chain[0].width: width or height is required"),
        (#"{"op": "resize", "width": 10, "height": 10, "fit": "squash"}"#, "outputs[0].chain[0].fit: must be one of cover, contain, fill, inside, outside, not \"squash\""),
        (#"{"op": "resize", "width": 10, "height": 10, "fit": "contain", "position": "entropy"}"#, "outputs[0].chain[0].position: entropy needs fit cover"),
        (#"{"op": "resize", "width": 10, "kernel": "mitchell"}"#, "outputs[0].chain[0].kernel: must be one of nearest, linear, cubic, lanczos3, not \"mitchell\""),
        (#"{"op": "crop", "trim": true, "width": 10}"#, "outputs[0].chain[0].width: does not apply to trim"),
        (#"{"op": "crop", "trim": true, "threshold": -1}"#, "outputs[0].chain[0].threshold: must be >= 0"),
        (#"{"op": "crop", "width": 10, "height": 10, "threshold": 5}"#, "outputs[0].chain[0].threshold: does not apply here (this object uses: gravity, height, op, trim, width)"),
        (#"{"op": "rotate", "angle": 30, "background": "black"}"#, "outputs[0].chain[0].background: must be a colour as #rgb, #rrggbb or #rrggbbaa, not \"black\""),
        (#"{"op": "flip"}"#, "outputs[0].chain[0].direction: is required (horizontal or vertical)"),
        (#"{"op": "flip", "direction": "diagonal"}"#, "outputs[0].chain[0].direction: must be one of horizontal, vertical, not \"diagonal\""),
        (#"{"op": "gamma", "exponent": 0}"#, "outputs[0].chain[0].exponent: must be > 0"),
        (#"{"op": "tint"}"#, "outputs[0].chain[0].colour: is required"),
        (#"{"op": "colorControls", "brightness": 2}"#, "outputs[0].chain[0].brightness: must be between -1 and 1"),
        (#"{"op": "colorControls", "contrast": -1}"#, "outputs[0].chain[0].contrast: must be >= 0"),
        (##"{"op": "overlay", "colour": "#fff", "opacity": 1.5}"##, "outputs[0].chain[0].opacity: must be between 0 and 1"),
        (#"{"op": "roundCorners", "radius": 2.5}"#, "outputs[0].chain[0].radius: must be a positive integer"),
        (#"{"op": "roundCorners", "radius": 5, "corners": ["topLeft", "middle"]}"#, "outputs[0].chain[0].corners[1]: unknown corner \"middle\" (known: bottomLeft, bottomRight, topLeft, topRight)"),
        (#"{"op": "roundCorners", "radius": 5, "corners": []}"#, "outputs[0].chain[0].corners: must name at least one corner"),
        (#"{"op": "border", "width": 0}"#, "outputs[0].chain[0].width: must be a positive integer"),
        (#"{"op": "pad", "width": 10, "top": 5}"#, "outputs[0].chain[0].top: give either width/height or margins, not both"),
        (#"{"op": "pad"}"#, "outputs[0].chain[0].width: give width and/or height, or at least one of top, right, bottom, left"),
        (#"{"op": "pad", "width": 10, "gravity": "attention"}"#, "outputs[0].chain[0].gravity: attention applies to crops only"),
        (#"{"op": "composite"}"#, "outputs[0].chain[0].image: is required"),
        (#"{"op": "watermark", "image": "watermark.png", "opacity": 2}"#, "outputs[0].chain[0].opacity: must be between 0 and 1"),
        (#"{"op": "watermark", "image": "watermark.png", "blend": "lighter"}"#, "outputs[0].chain[0].blend: must be one of clear, source, over, in, out, atop, dest, dest-over, dest-in, dest-out, dest-atop, xor, add, saturate, multiply, screen, overlay, darken, lighten, colour-dodge, colour-burn, hard-light, soft-light, difference, exclusion, not \"lighter\""),
        (#"{"op": "watermark", "image": "watermark.png", "scale": 0}"#, "outputs[0].chain[0].scale: must be > 0"),
        (#"{"op": "watermark", "image": "watermark.png", "offsetX": 1.5}"#, "outputs[0].chain[0].offsetX: must be an integer"),
        (##"{"op": "flatten", "background": "#ffffff80"}"##, "outputs[0].chain[0].background: must be opaque (no alpha digits, or ff)"),
    ])
    func validation(step: String, message: String) {
        #expect(throws: JobFileError.self) { try identifier(step) }
        do {
            _ = try identifier(step)
        } catch {
            #expect("\(error)" == message)
        }
    }
}
