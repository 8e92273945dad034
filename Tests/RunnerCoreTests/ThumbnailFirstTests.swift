import Foundation
import Testing
import TestSupport

/// `thumbnail` as a first step decodes with shrink-on-load, which streams the source top to
/// bottom; every op after it must still work, including those that read the image out of order.
@Suite("Thumbnail first: every op after a shrink-on-load decode")
struct ThumbnailFirstTests {
    /// 400x300 each; the thumbnail makes them 300x225.
    static let sources = ["formats/photo.jpg", "formats/photo.png", "formats/photo.webp"]

    /// Each op (random-access ones in every variant) and the size it must come out, when that is fixed.
    static let steps: [(String, (Int, Int)?)] = [
        (#"{"op": "thumbnail", "width": 100, "height": 100, "position": "attention"}"#, (100, 100)),
        (#"{"op": "thumbnail", "width": 150, "fit": "inside"}"#, (150, 113)),
        (#"{"op": "resize", "width": 128, "height": 128, "position": "attention"}"#, (128, 128)),
        (#"{"op": "resize", "width": 128, "height": 128, "position": "entropy"}"#, (128, 128)),
        (#"{"op": "resize", "width": 128, "height": 128, "fit": "contain", "position": "north"}"#, (128, 128)),
        (#"{"op": "resize", "width": 150}"#, (150, 113)),
        (#"{"op": "crop", "width": 128, "height": 128, "gravity": "attention"}"#, (128, 128)),
        (#"{"op": "crop", "width": 128, "height": 128, "gravity": "entropy"}"#, (128, 128)),
        (#"{"op": "crop", "width": 128, "height": 128, "gravity": "southeast"}"#, (128, 128)),
        (#"{"op": "crop", "x": 10, "y": 20, "width": 100, "height": 100}"#, (100, 100)),
        (#"{"op": "crop", "trim": true, "threshold": 200}"#, nil),
        (#"{"op": "rotate", "angle": 90}"#, (225, 300)),
        (#"{"op": "rotate", "angle": 180}"#, (300, 225)),
        (#"{"op": "rotate", "angle": 270}"#, (225, 300)),
        (#"{"op": "rotate", "angle": 30}"#, nil),
        (#"{"op": "flip", "direction": "horizontal"}"#, (300, 225)),
        (#"{"op": "flip", "direction": "vertical"}"#, (300, 225)),
        (#"{"op": "autorotate"}"#, (300, 225)),
        (#"{"op": "sharpen"}"#, (300, 225)),
        (#"{"op": "blur", "sigma": 2}"#, (300, 225)),
        (#"{"op": "gamma"}"#, (300, 225)),
        (#"{"op": "grayscale"}"#, (300, 225)),
        (##"{"op": "tint", "colour": "#ff000040"}"##, (300, 225)),
        (#"{"op": "colorControls", "contrast": 1.2}"#, (300, 225)),
        (##"{"op": "overlay", "colour": "#0000ff"}"##, (300, 225)),
        (#"{"op": "roundCorners", "radius": 20}"#, (300, 225)),
        (##"{"op": "border", "width": 4, "colour": "#00ff00"}"##, (300, 225)),
        (#"{"op": "pad", "top": 10}"#, (300, 235)),
        (#"{"op": "pad", "width": 400, "height": 300, "gravity": "east"}"#, (400, 300)),
        (#"{"op": "composite", "image": "watermark.png", "gravity": "southeast"}"#, (300, 225)),
        (#"{"op": "flatten"}"#, (300, 225)),
    ]

    @Test("every op works after a thumbnail first step", arguments: sources, steps.indices)
    func opAfterThumbnail(source: String, index: Int) throws {
        let (step, size) = Self.steps[index]
        let render = try Render(source, chain: #"{"op": "thumbnail", "width": 300, "fit": "inside"}, "# + step,
                                files: ["watermark.png"])
        let probe = try #require(render.probe, "\(source) |> \(step): \(render.result)")
        if let (width, height) = size {
            #expect(probe.width == width && probe.height == height, "\(source) |> \(step): \(probe.width)x\(probe.height)")
        }
    }

    /// Rotations and vertical flips read far out of order only on images larger than libvips'
    /// window over a streamed decode, such as this 800x600 thumbnail.
    @Test("the issue's chain, and out-of-order ops after a large thumbnail", arguments: [
        (#"{"op": "crop", "width": 256, "height": 256, "gravity": "attention"}"#, 256, 256),
        (#"{"op": "rotate", "angle": 180}"#, 800, 600),
        (#"{"op": "flip", "direction": "vertical"}"#, 800, 600),
        (#"{"op": "rotate", "angle": 90}"#, 600, 800),
    ])
    func largeThumbnail(step: String, width: Int, height: Int) throws {
        let render = try Render("photos/picos-de-europa.jpg", chain: #"{"op": "thumbnail", "width": 800, "fit": "inside"}, "# + step,
                                format: #"{"type": "jpeg"}"#, extension: "jpg")
        let probe = try #require(render.probe, "\(step): \(render.result)")
        #expect(probe.width == width && probe.height == height)
    }
}
