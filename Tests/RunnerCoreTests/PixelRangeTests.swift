import Foundation
import TestSupport
import Testing

/// libvips cannot make an image side or offset beyond VIPS_MAX_COORD (10,000,000); larger values
/// trapped the worker converting them to 32 bits, so every item failed `crashed`.
@Suite("Pixel sizes and offsets beyond libvips' limit are job-file errors")
struct PixelRangeTests {
    func error(_ step: String) -> JobFileError? {
        do {
            _ = try Job.parse(text: """
                {"version": 1, "sources": [{"path": "p"}],
                 "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [\(step)], "format": {"type": "jpeg"}}]}
                """, filePath: "/j/job.json")
            return nil
        } catch let error as JobFileError {
            return error
        } catch {
            return nil
        }
    }

    @Test("every pixel size names its key", arguments: [
        (#"{"op": "resize", "width": 3000000000}"#, "outputs[0].chain[0].width"),
        (#"{"op": "resize", "width": 10, "height": 10000001, "fit": "fill"}"#, "outputs[0].chain[0].height"),
        (#"{"op": "crop", "width": 10, "height": 10, "x": 2147483648}"#, "outputs[0].chain[0].x"),
        (#"{"op": "crop", "width": 3000000000, "height": 10}"#, "outputs[0].chain[0].width"),
        (#"{"op": "border", "width": 3000000000}"#, "outputs[0].chain[0].width"),
        (#"{"op": "roundCorners", "radius": 3000000000}"#, "outputs[0].chain[0].radius"),
        (#"{"op": "thumbnail", "width": 4294967296, "fit": "inside"}"#, "outputs[0].chain[0].width"),
        (#"{"op": "thumbnail", "width": 10, "height": 10000001}"#, "outputs[0].chain[0].height"),
        (#"{"op": "pad", "width": 2147483648}"#, "outputs[0].chain[0].width"),
        (#"{"op": "pad", "top": 8999999999999999}"#, "outputs[0].chain[0].top"),
    ])
    func rejected(step: String, location: String) {
        #expect(error(step)?.location == location, "\(step)")
    }

    @Test("a composite offset beyond the limit, either way")
    func compositeOffsets() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("runner-pixels-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data([0x89, 0x50, 0x4e, 0x47]).write(to: URL(fileURLWithPath: folder + "/w.png"))
        for (key, value) in [("offsetX", "4294967296"), ("offsetY", "-4294967296")] {
            #expect(throws: JobFileError.self, "\(key) \(value)") {
                try Job.parse(text: """
                    {"version": 1, "sources": [{"path": "p"}],
                     "outputs": [{"name": "t", "path": "o/{stem}.jpg",
                                  "chain": [{"op": "composite", "image": "w.png", "\(key)": \(value)}], "format": {"type": "jpeg"}}]}
                    """, filePath: folder + "/job.json")
            }
        }
        #expect(error(#"{"op": "thumbnail", "width": 10000000, "height": 1}"#) == nil, "the limit itself is fine")
        #expect(error(#"{"op": "resize", "width": 10000000}"#) == nil, "the limit itself is fine")
        #expect(error(#"{"op": "resize", "width": 3000000000}"#)?.message.contains("at most 10000000") == true)
    }
}
