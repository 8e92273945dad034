import Foundation
import Testing
import TestSupport

/// PyPI's `thumbhash` 0.1.2 decoder, with its two slips fixed so it is the reference algorithm: it
/// appends each pixel's cosines to lists it never clears (so every pixel reads pixel (0, 0)'s) and
/// prints the aspect ratio. For each hash (hex) it prints the picture and the hash's average colour.
private let referenceDecoder = """
    import sys, json, inspect, thumbhash
    source = inspect.getsource(thumbhash.thumb_hash_to_rgba)
    fixed = source.replace("    print(ratio)\\n", "").replace("            l = l_dc\\n", "            fx, fy = [], []\\n            l = l_dc\\n")
    assert fixed.count("fx, fy = [], []") == 2 and "print(" not in fixed, "thumbhash's decoder changed"
    namespace = dict(vars(thumbhash))
    exec(fixed, namespace)
    for text in sys.argv[1:]:
        hash = list(bytes.fromhex(text))
        w, h, rgba = namespace['thumb_hash_to_rgba'](hash)
        print(json.dumps({'w': w, 'h': h, 'rgba': rgba, 'average': list(thumbhash.thumb_hash_to_average_rgba(hash))}))
    """

@Suite("ThumbHash decoding against the reference decoder")
struct ThumbHashDecodingTests {
    /// The PyPI port rounds where the original (a Uint8Array) truncates, so a channel may differ by 1:
    /// measured on the 14 pictures, at most 1 and a mean absolute difference of 0.32 to 0.45 (of 255).
    /// The mean colour is the hash's average colour but for clamping and truncation: measured within
    /// 0.013 per channel (0-1; yellow-flower.jpg, whose bright petals clamp).
    @Test("runner's ThumbHashes of the fixture photos decode pixel for pixel as the reference decoder does")
    func decodesAsTheReference() throws {
        let sources = fixturePhotos + [Fixtures.path("formats/alpha.png"), Fixtures.path("orientation/orient-6.jpg")]
        let hashes = try sources.map { path in
            let frame = try DerivationFrame(decodedImage(path))
            return ThumbHash.encode(width: frame.width, height: frame.height, rgba: frame.rgba)
        }
        let result = try PythonReferences.run(referenceDecoder, hashes.map { $0.map { String(format: "%02x", $0) }.joined() })
        #expect(result.status == 0, "\(result.stderr)")
        let references = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        try #require(references.count == hashes.count, "\(result.stdout.prefix(500))")
        for (index, (hash, reference)) in zip(hashes, references).enumerated() {
            let name = Paths.lastComponent(sources[index])
            let picture = try #require(ThumbHash.decode(hash), "\(name)")
            let theirs = try #require(reference["rgba"] as? [Int])
            #expect(picture.width == reference["w"] as? Int && picture.height == reference["h"] as? Int, "\(name)")
            try #require(theirs.count == picture.rgba.count, "\(name)")
            let differences = zip(picture.rgba, theirs).map { abs(Int($0) - $1) }
            let mad = Double(differences.reduce(0, +)) / Double(differences.count)
            #expect(differences.max() ?? 0 <= 1 && mad <= 0.5, "\(name): largest \(differences.max() ?? 0), mean \(mad)")
            let average = try #require(reference["average"] as? [Double])
            let mean = (0..<4).map { channel in
                Double(stride(from: channel, to: picture.rgba.count, by: 4).map { Int(picture.rgba[$0]) }.reduce(0, +))
                    / Double(picture.width * picture.height) / 255
            }
            let distance = zip(mean, average).map { abs($0 - $1) }.max() ?? 1
            #expect(distance <= 0.02, "\(name): mean colour \(mean) against the hash's average \(average)")
        }
    }

    @Test("a hash too short for its header decodes to nothing, and the placeholder is a PNG of the decoded size")
    func shortHashesAndPNG() throws {
        let frame = try DerivationFrame(decodedImage(fixturePhotos[0]))
        let hash = ThumbHash.encode(width: frame.width, height: frame.height, rgba: frame.rgba)
        #expect(ThumbHash.decode(Array(hash.prefix(4))) == nil)
        #expect(ThumbHash.decode(Array(hash.prefix(8))) == nil)
        let png = try #require(try ThumbHash.placeholderPNG(hash))
        let picture = try #require(ThumbHash.decode(hash))
        #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        let workspace = try Workspace()
        try png.write(to: URL(fileURLWithPath: workspace.path("placeholder.png")))
        let image = try decodedImage(workspace.path("placeholder.png"))
        #expect(image.width == picture.width && image.height == picture.height && image.bands == 3, "an opaque placeholder has no alpha band")
    }
}
