import Foundation
import Testing
import TestSupport

/// runner's `thumbnail` makes libvips' own pictures: every fit, box, orientation and colour space of
/// a JPEG, pixel for pixel as `vips thumbnail` makes them (the box, size and crop runner hands to
/// libvips, and the shrink-on-load libvips picks from them).
@Suite("JPEG shrink-on-load: the same pixels as libvips' thumbnail")
struct JPEGShrinkOnLoadTests {
    /// Sources: EXIF orientations (300x200 stored), profiles, CMYK, grey, progressive, a 1200x800 photo.
    static let sources = (1...8).map { "orientation/orient-\($0).jpg" }
        + ["formats/adobergb.jpg", "formats/cmyk.jpg", "formats/cmyk-noprofile.jpg", "formats/grey.jpg",
           "quirky/progressive.jpg", "photos/aitzgorri.jpg"]

    /// Boxes around the scale steps (16x, 8x and 4x of 1200 and of 300 px), as runner and `vips thumbnail` spell them.
    static let boxes: [(chain: String, cli: [String])] = [
        (#"{"op": "thumbnail", "width": 75, "fit": "inside"}"#, ["75", "--height", "10000000", "--size", "down"]),
        (#"{"op": "thumbnail", "width": 74, "height": 74, "fit": "inside"}"#, ["74", "--height", "74", "--size", "down"]),
        (#"{"op": "thumbnail", "width": 150, "height": 150}"#, ["150", "--height", "150", "--size", "down", "--crop", "centre"]),
        (#"{"op": "thumbnail", "width": 301, "height": 40}"#, ["301", "--height", "40", "--size", "down", "--crop", "centre"]),
        (#"{"op": "thumbnail", "width": 18, "height": 37, "fit": "fill"}"#, ["18", "--height", "37", "--size", "force"]),
        (#"{"op": "thumbnail", "height": 19, "fit": "inside"}"#, ["10000000", "--height", "19", "--size", "down"]),
        (#"{"op": "thumbnail", "width": 600, "height": 600, "fit": "inside"}"#, ["600", "--height", "600", "--size", "down"]),
    ]

    @Test("every source and box: the same size and identical pixels as `vips thumbnail`", arguments: [true, false])
    func sameAsLibvipsThumbnail(autorotate: Bool) throws {
        let workspace = try Workspace()
        ImageProbe.startVips()
        try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true)
        for source in Self.sources {
            let path = Fixtures.path(source)
            let profile = ["formats/adobergb.jpg", "formats/cmyk.jpg", "formats/cmyk-noprofile.jpg"].contains(source)
            for (index, box) in Self.boxes.enumerated() {
                // One output per render: in a set, smaller outputs would be scaled from the larger ones.
                let output = try ResponsiveSetTests.render(path, chains: [box.chain], in: workspace,
                                                           folder: "runner-\(autorotate)/\(source)/\(index)", autorotate: autorotate)[0]
                let expected = workspace.path("vips-\(autorotate)/\(source)/\(box.cli[0])x\(box.cli[2])-\(box.cli.count).png")
                try FileManager.default.createDirectory(atPath: (expected as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
                try VipsCLI.run("vips", ["thumbnail", path, expected] + box.cli + (profile ? ["--export-profile", "srgb"] : [])
                                + (autorotate ? [] : ["--no-rotate"]))
                let (ours, theirs) = (try #require(ImageProbe.open(output)), try #require(ImageProbe.open(expected)))
                #expect(ours.width == theirs.width && ours.height == theirs.height,
                        "\(source) \(box.chain): \(ours.width)x\(ours.height), libvips \(theirs.width)x\(theirs.height)")
                if ours.width == theirs.width && ours.height == theirs.height {
                    #expect(ImageProbe.meanAbsoluteDifference(output, expected) == 0, "\(source) \(box.chain)")
                }
            }
        }
    }
}
