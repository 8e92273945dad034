import Foundation
import Testing
import TestSupport

/// runner's `thumbnail` makes libvips' own pictures: every fit, box, orientation and colour space of
/// a JPEG, pixel for pixel as `vipsthumbnail` makes them (the box, size and crop runner hands to
/// libvips, and the shrink-on-load libvips picks from them).
@Suite("JPEG shrink-on-load: the same pixels as libvips' thumbnail")
struct JPEGShrinkOnLoadTests {
    /// Sources: EXIF orientations (300x200 stored), profiles, CMYK, grey, progressive, a 1200x800 photo.
    static let sources = (1...8).map { "orientation/orient-\($0).jpg" }
        + ["formats/adobergb.jpg", "formats/cmyk.jpg", "formats/cmyk-noprofile.jpg", "formats/grey.jpg",
           "quirky/progressive.jpg", "photos/aitzgorri.jpg"]
    /// Those with a profile or CMYK, exported to sRGB as runner does.
    static let profiled: Set = ["formats/adobergb.jpg", "formats/cmyk.jpg", "formats/cmyk-noprofile.jpg"]

    /// Boxes around the scale steps (16x, 8x and 4x of 1200 and of 300 px), as runner and `vipsthumbnail`
    /// spell them (`>`: only shrink, `!`: force the size).
    static let boxes: [(chain: String, cli: [String])] = [
        (#"{"op": "thumbnail", "width": 75, "fit": "inside"}"#, ["-s", "75x10000000>"]),
        (#"{"op": "thumbnail", "width": 74, "height": 74, "fit": "inside"}"#, ["-s", "74x74>"]),
        (#"{"op": "thumbnail", "width": 150, "height": 150}"#, ["-s", "150x150>", "-m", "centre"]),
        (#"{"op": "thumbnail", "width": 301, "height": 40}"#, ["-s", "301x40>", "-m", "centre"]),
        (#"{"op": "thumbnail", "width": 18, "height": 37, "fit": "fill"}"#, ["-s", "18x37!"]),
        (#"{"op": "thumbnail", "height": 19, "fit": "inside"}"#, ["-s", "10000000x19>"]),
        (#"{"op": "thumbnail", "width": 600, "height": 600, "fit": "inside"}"#, ["-s", "600x600>"]),
    ]

    @Test("every source and box: the same size and identical pixels as `vipsthumbnail`", arguments: [true, false])
    func sameAsLibvipsThumbnail(autorotate: Bool) throws {
        let workspace = try Workspace()
        ImageProbe.startVips()
        try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true)
        for (index, box) in Self.boxes.enumerated() {
            // libvips' pictures: one `vipsthumbnail` for the box's sources with a profile, one for the others.
            let expected = workspace.path("vips-\(autorotate)/\(index)")
            try FileManager.default.createDirectory(atPath: expected, withIntermediateDirectories: true)
            for profiled in [true, false] {
                let files = Self.sources.filter { Self.profiled.contains($0) == profiled }.map(Fixtures.path)
                try VipsCLI.run("vipsthumbnail", files + box.cli + (profiled ? ["-e", "srgb"] : []) + (autorotate ? [] : ["--no-rotate"])
                                + ["-o", expected + "/%s.png"])
            }
            for source in Self.sources {
                // One output per render: in a set, smaller outputs would be scaled from the larger ones.
                let output = try ResponsiveSetTests.render(Fixtures.path(source), chains: [box.chain], in: workspace,
                                                           folder: "runner-\(autorotate)/\(source)/\(index)", autorotate: autorotate)[0]
                let theirs = expected + "/" + ((source as NSString).lastPathComponent as NSString).deletingPathExtension + ".png"
                let (ours, libvips) = (try #require(ImageProbe.open(output)), try #require(ImageProbe.open(theirs)))
                #expect(ours.width == libvips.width && ours.height == libvips.height,
                        "\(source) \(box.chain): \(ours.width)x\(ours.height), libvips \(libvips.width)x\(libvips.height)")
                if ours.width == libvips.width && ours.height == libvips.height {
                    #expect(ImageProbe.meanAbsoluteDifference(output, theirs) == 0, "\(source) \(box.chain)")
                }
            }
        }
    }
}
