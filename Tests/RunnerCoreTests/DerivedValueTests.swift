import CVips
import Foundation
import Testing
import TestSupport

/// The fixture photos (real photographs, 480 to 1200 px).
let fixturePhotos = ["photos/aitzgorri.jpg", "photos/bird-lamp.png", "photos/fig-bowl.jpg", "photos/friends.jpg",
                     "photos/picos-de-europa.jpg", "photos/wine.webp", "photos/nested/life.jpg", "photos/nested/sunset.jpg",
                     "extra/ladybird.jpg", "extra/yellow-flower.jpg", "more/a/kleiber.jpg", "more/b/seeding.jpg"].map(Fixtures.path)

/// A file decoded as a worker decodes it (display orientation).
func decodedImage(_ path: String) throws -> VipsImageHandle {
    ImageProbe.startVips()
    let source = try VipsSourceHandle(path: path, byName: true)
    guard let pointer = cvips_open(source.pointer, VIPS_ACCESS_RANDOM, VIPS_FAIL_ON_ERROR) else { throw VipsError.capture("load") }
    return try VipsImageHandle(taking: pointer, retaining: nil).derive("autorot") { cvips_autorot($0, $1) }
}

/// Runs `program` over frames written to `workspace` as raw RGBA (`NAME.rgba`, with width and
/// height as arguments) and returns its output lines as JSON objects, one per frame.
private func referenceValues(_ program: String, _ frames: [DerivationFrame], in workspace: Workspace) throws -> [[String: Any]] {
    var arguments: [String] = []
    for (index, frame) in frames.enumerated() {
        let path = workspace.path("\(index).rgba")
        try Data(frame.rgba).write(to: URL(fileURLWithPath: path))
        arguments += [path, "\(frame.width)", "\(frame.height)"]
    }
    let result = try PythonReferences.run(program, arguments)
    #expect(result.status == 0, "\(result.stderr)")
    return result.stdout.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
}

/// Each frame's values as the PyPI references compute them from the same bytes.
private let samePixels = """
    import sys, json, base64
    from PIL import Image
    import thumbhash, blurhash, imagehash
    args = sys.argv[1:]
    for path, w, h in zip(args[0::3], args[1::3], args[2::3]):
        w, h = int(w), int(h)
        data = open(path, 'rb').read()
        image = Image.frombytes('RGBA', (w, h), data)
        rgb = [[list(data[(y * w + x) * 4:(y * w + x) * 4 + 3]) for x in range(w)] for y in range(h)]
        values = {'blurhash43': blurhash.encode(rgb, 4, 3), 'dhash': str(imagehash.dhash(image)), 'phash': str(imagehash.phash(image))}
        if path.endswith('0.rgba'):
            values['blurhash99'] = blurhash.encode(rgb, 9, 9)
            values['blurhash11'] = blurhash.encode(rgb, 1, 1)
        # The PyPI port fails on translucent pictures (its alpha channel's terms are a tuple), so opaque only.
        if all(data[i] == 255 for i in range(3, len(data), 4)):
            values['thumbhash'] = base64.b64encode(bytes(thumbhash.rgba_to_thumb_hash(w, h, list(data)))).decode()
        print(json.dumps(values))
    """

/// What the PyPI references make of each file on their own (Pillow decodes and resizes), with the
/// distance to runner's values given after each path: hashes in differing bits, BlurHash as the mean
/// absolute difference of the two hashes decoded to 32x32 (0-255 per channel), ThumbHash as the
/// largest difference of their average colours (0-1 per channel).
private let fromFiles = """
    import sys, json
    from PIL import Image, ImageOps
    import thumbhash, blurhash, imagehash
    args = sys.argv[1:]
    for path, dhash, phash, blur, thumb in zip(*[args[i::5] for i in range(5)]):
        image = ImageOps.exif_transpose(Image.open(path)).convert('RGB')
        bits = lambda ours, theirs: bin(int(ours, 16) ^ int(str(theirs), 16)).count('1')
        small = image.copy()
        small.thumbnail((100, 100))
        theirs = blurhash.encode([[list(small.getpixel((x, y))) for x in range(small.width)] for y in range(small.height)], 4, 3)
        a, b = blurhash.decode(blur, 32, 32), blurhash.decode(theirs, 32, 32)
        mad = sum(abs(a[y][x][c] - b[y][x][c]) for y in range(32) for x in range(32) for c in range(3)) / (32 * 32 * 3)
        ours_avg = thumbhash.thumb_hash_to_average_rgba(list(bytes.fromhex(thumb)))
        theirs_avg = thumbhash.thumb_hash_to_average_rgba(thumbhash.image_to_thumb_hash(path))
        print(json.dumps({'dhash': bits(dhash, imagehash.dhash(image)), 'phash': bits(phash, imagehash.phash(image)),
                          'blurhash': mad, 'thumbhash': max(abs(x - y) for x, y in zip(ours_avg, theirs_avg))}))
    """

@Suite("Derived values against their reference implementations")
struct DerivedValueTests {
    @Test("on the same pixels ThumbHash, BlurHash, dHash and pHash are exactly the PyPI references' values")
    func samePixelsSameValues() throws {
        let workspace = try Workspace()
        let sources = fixturePhotos + [Fixtures.path("formats/alpha.png"), Fixtures.path("formats/grey.jpg"),
                                       Fixtures.path("formats/rgb16.png"), Fixtures.path("orientation/orient-6.jpg")]
        let frames = try sources.map { try DerivationFrame(decodedImage($0)) }
        let references = try referenceValues(samePixels, frames, in: workspace)
        try #require(references.count == frames.count)
        var thumbHashes = 0
        for (index, (frame, reference)) in zip(frames, references).enumerated() {
            let name = Paths.lastComponent(sources[index])
            #expect(BlurHash(x: 4, y: 3).value(of: frame) == .string(reference["blurhash43"] as? String ?? ""), "\(name)")
            #expect(DHash().value(of: frame) == .string(reference["dhash"] as? String ?? ""), "\(name)")
            #expect(PHash().value(of: frame) == .string(reference["phash"] as? String ?? ""), "\(name)")
            if let expected = reference["thumbhash"] as? String {
                #expect(ThumbHash().value(of: frame) == .string(expected), "\(name)")
                thumbHashes += 1
            }
            if index == 0 {
                #expect(BlurHash(x: 9, y: 9).value(of: frame) == .string(reference["blurhash99"] as? String ?? ""))
                #expect(BlurHash(x: 1, y: 1).value(of: frame) == .string(reference["blurhash11"] as? String ?? ""))
            }
        }
        #expect(thumbHashes == frames.count - 1, "every frame but alpha.png's is opaque")
    }

    /// Pillow and libvips decode and scale differently, so here the values differ a little: dHash and
    /// pHash by at most 4 bits of imagehash's on the full-size picture, BlurHash decoded to 32x32 by a
    /// mean absolute difference of at most 3 (of 255), ThumbHash's average colour by at most 0.05.
    @Test("from the files, runner's values are within a stated distance of what the references make with Pillow")
    func fromFilesNearReferences() throws {
        var arguments: [String] = []
        for photo in fixturePhotos {
            let frame = try DerivationFrame(decodedImage(photo))
            let thumb = ThumbHash.encode(width: frame.width, height: frame.height, rgba: frame.rgba)
            arguments += [photo, PHash.hex(DHash().hash(of: frame.grey)), PHash.hex(PHash().hash(of: frame.grey)),
                          BlurHash(x: 4, y: 3).encode(width: frame.width, height: frame.height, rgba: frame.rgba),
                          thumb.map { String(format: "%02x", $0) }.joined()]
        }
        let result = try PythonReferences.run(fromFiles, arguments)
        #expect(result.status == 0, "\(result.stderr)")
        let distances = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Double]
        }
        try #require(distances.count == fixturePhotos.count, "\(result.stdout)")
        // Measured on the 12 fixtures: at most 2 bits for either hash, BlurHash 1.38, ThumbHash 0.021
        // (its average colour is kept in steps of 1/63 and 1/31.5: one step).
        for (photo, distance) in zip(fixturePhotos, distances) {
            let name = Paths.lastComponent(photo)
            #expect(distance["dhash"].map { $0 <= 4 } == true, "\(name): dHash \(distance)")
            #expect(distance["phash"].map { $0 <= 4 } == true, "\(name): pHash \(distance)")
            #expect(distance["blurhash"].map { $0 <= 3 } == true, "\(name): BlurHash \(distance)")
            #expect(distance["thumbhash"].map { $0 <= 0.05 } == true, "\(name): ThumbHash \(distance)")
        }
    }

    /// A 400x300 PNG: `background` everywhere but the 40x40 square at (`x`, `y`), which is `colour`.
    /// Written as PPM, then converted by the vips CLI: tests in this process may block PPM, an untrusted loader.
    private func picture(_ workspace: Workspace, background: [UInt8], square colour: [UInt8], x: Int, y: Int) throws -> String {
        var bytes = Array("P6\n400 300\n255\n".utf8)
        for row in 0..<300 {
            for column in 0..<400 {
                bytes += (x..<x + 40).contains(column) && (y..<y + 40).contains(row) ? colour : background
            }
        }
        let path = workspace.path("picture-\(x)-\(y)")
        try Data(bytes).write(to: URL(fileURLWithPath: path + ".ppm"))
        try VipsCLI.run("vips", ["copy", path + ".ppm", path + ".png"])
        return path + ".png"
    }

    @Test("the dominant colour is the mean of the fullest histogram bin; the focal point is where the attention crop looks")
    func dominantAndFocal() throws {
        let workspace = try Workspace()
        // Dull grey-green all over but a saturated red square: the grey is dominant, the square is the interest.
        for (x, y) in [(300, 60), (40, 220), (180, 130)] {
            let frame = try DerivationFrame(decodedImage(try picture(workspace, background: [90, 110, 95], square: [230, 20, 30], x: x, y: y)))
            #expect(DominantColour().value(of: frame) == .string("#5a6e5f"))
            let point = try FocalPoint().point(of: frame.image)
            let centre = (x: Double(x + 20) / 400, y: Double(y + 20) / 300)
            #expect(abs(point.x - centre.x) <= 0.08 && abs(point.y - centre.y) <= 0.08, "square centred at \(centre), focal point \(point)")
        }
        // The mean of the fullest bin, not its centre: the bin of 80...95 holds 90, and says 90.
        let flat = try DerivationFrame(decodedImage(try picture(workspace, background: [90, 90, 90], square: [0, 0, 255], x: 0, y: 0)))
        #expect(DominantColour().colour(rgba: flat.rgba) == Colour(red: 90, green: 90, blue: 90, alpha: 255))
        // Pixels under half opacity do not count: alpha.png is photo.png with transparent corners.
        let alpha = try DerivationFrame(decodedImage(Fixtures.path("formats/alpha.png")))
        let opaque = try DerivationFrame(decodedImage(Fixtures.path("formats/photo.png")))
        #expect(DominantColour().value(of: alpha) == DominantColour().value(of: opaque))
    }

    @Test("a frame fits 100x100 with the aspect kept, as 8-bit RGBA whatever the source's bands and depth")
    func frameShape() throws {
        let landscape = try DerivationFrame(decodedImage(Fixtures.path("photos/aitzgorri.jpg")))  // 1200x800
        #expect((landscape.width, landscape.height, landscape.rgba.count) == (100, 67, 100 * 67 * 4))
        let portrait = try DerivationFrame(decodedImage(Fixtures.path("photos/friends.jpg")))  // 533x800
        #expect((portrait.width, portrait.height) == (67, 100))
        let small = try DerivationFrame(decodedImage(Fixtures.path("orientation/upright.png")))  // 300x200
        #expect((small.width, small.height) == (100, 67))
        for grey in ["formats/gray16.tif", "formats/grey.jpg"] {
            let frame = try DerivationFrame(decodedImage(Fixtures.path(grey)))
            let pixels = stride(from: 0, to: frame.rgba.count, by: 4).map { Array(frame.rgba[$0..<$0 + 4]) }
            #expect(pixels.allSatisfy { $0[0] == $0[1] && $0[1] == $0[2] && $0[3] == 255 }, "\(grey): grey, opaque")
            #expect(Set(pixels.map { $0[0] }).count > 16, "\(grey): 16-bit values scaled to 8 bits, not clipped")
        }
        let alpha = try DerivationFrame(decodedImage(Fixtures.path("formats/alpha.png")))
        #expect(alpha.rgba.enumerated().contains { $0.offset % 4 == 3 && $0.element == 0 }, "alpha.png's transparent corners stay")
    }
}
