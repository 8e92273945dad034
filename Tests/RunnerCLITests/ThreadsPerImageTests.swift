import Foundation
import Testing
import TestSupport

@Suite("libvips threads per image change the speed, never the pictures")
struct ThreadsPerImageTests {
    /// With one thread a worker renders on its own thread, strip by strip; with more, libvips'
    /// pool does it. Both must make the same bytes, for a shrink-on-load thumbnail and for a full
    /// decode that two outputs share (rendered to memory once).
    @Test("threadsPerImage 1 and 3 write byte-identical outputs")
    func sameBytes() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/bird-lamp.png", "photos/wine.webp",
                                    "extra/ladybird.jpg"], to: "in")
        var outputs: [Int: [String: Data]] = [:]
        for threads in [1, 3] {
            let job = try workspace.writeJob("""
            {"version": 1, "name": "threads",
             "sources": [{"path": "in", "include": ["*"]}],
             "outputs": [
               {"name": "thumb", "path": "out\(threads)/{stem}-thumb.jpg",
                "chain": [{"op": "thumbnail", "width": 96, "height": 96, "fit": "inside"}], "format": {"type": "jpeg"}},
               {"name": "blur", "path": "out\(threads)/{stem}-blur.png",
                "chain": [{"op": "blur", "sigma": 2}], "format": {"type": "png"}},
               {"name": "grey", "path": "out\(threads)/{stem}-grey.png",
                "chain": [{"op": "grayscale"}], "format": {"type": "png"}}],
             "concurrency": {"threadsPerImage": \(threads)},
             "state": "state\(threads).sqlite"}
            """, name: "job\(threads).json")
            let result = try workspace.run([job])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("12 done, 0 failed"))
            let folder = "out\(threads)"
            outputs[threads] = Dictionary(uniqueKeysWithValues: workspace.files(in: folder).map { name in
                (name, FileManager.default.contents(atPath: workspace.path("\(folder)/\(name)")) ?? Data())
            })
        }
        let one = try #require(outputs[1]), three = try #require(outputs[3])
        #expect(one.count == 12)
        #expect(one.keys.sorted() == three.keys.sorted())
        let differing = one.keys.filter { one[$0] != three[$0] }.sorted()
        #expect(differing.isEmpty, "outputs that differ between 1 and 3 threads: \(differing)")
    }
}
