import Foundation
import Testing
import TestSupport

/// A responsive set: many thumbnails of one source. The largest whole frame is decoded once and
/// the smaller outputs are scaled from it; each must look like the output made on its own.
@Suite("A responsive set from one decode")
struct ResponsiveSetTests {
    static let chains = [
        #"{"op": "thumbnail", "width": 1600, "fit": "inside"}"#,
        #"{"op": "thumbnail", "width": 320, "fit": "inside"}"#,
        #"{"op": "thumbnail", "width": 800, "fit": "inside"}"#,
        #"{"op": "thumbnail", "width": 200, "height": 200}"#,
        #"{"op": "thumbnail", "width": 300, "height": 100, "fit": "fill"}"#,
        ##"{"op": "thumbnail", "width": 400, "height": 400, "fit": "contain", "background": "#ffffff"}"##,
        #"{"op": "thumbnail", "width": 500, "height": 500, "fit": "outside"}"#,
        #"{"op": "thumbnail", "width": 640, "fit": "inside"}, {"op": "sharpen"}"#,
    ]

    /// Renders `chains` (each an output) from `source` in one pipeline call, as a worker does.
    static func render(_ source: String, chains: [String], in workspace: Workspace, folder: String,
                       autorotate: Bool = true) throws -> [String] {
        let outputs = chains.enumerated().map { index, chain in
            #"{"name": "o\#(index)", "path": "\#(folder)/\#(index)/{stem}.png", "chain": [\#(chain)], "format": {"type": "png"}, "#
                + #""autorotate": \#(autorotate)}"#
        }
        let job = try Job.parse(text: #"{"version": 1, "sources": [{"path": "."}], "outputs": [\#(outputs.joined(separator: ","))]}"#,
                                filePath: workspace.path("job.json"))
        let paths = chains.indices.map { workspace.path("\(folder)/\($0)/source.png") }
        let pipeline = ImagePipeline(outputs: job.outputs, limits: job.limits, stagingOwner: getpid())
        let outcomes = pipeline.render(sourcePath: source, requests: paths.enumerated().map { OutputRequest(outputIndex: $0, path: $1) }).outcomes
        for (outcome, path) in zip(outcomes, paths) {
            guard case .done(let rendered, _) = outcome else { Issue.record("\(path): \(outcome)"); continue }
            #expect(AtomicFile.publish([AtomicFile.Staged(temporary: rendered.temporary, path: path)]) == [nil])
        }
        return paths
    }

    @Test("every output of the set matches the same output made alone: same size within a pixel, mean difference under 1/255")
    func matchesOutputsMadeAlone() throws {
        let workspace = try Workspace()
        // A 2400x1600 JPEG, so shrink-on-load and the cascade both have room to work.
        let source = workspace.path("source.jpg")
        try VipsCLI.run("vips", ["resize", Fixtures.path("photos/aitzgorri.jpg"), source + "[Q=92]", "2"])
        try Self.expectMatchesAlone(source, chains: Self.chains, in: workspace)
    }

    @Test("the benchmark's set on a tall photo, whose frames libvips rounds down, matches too")
    func tallPhotoMatchesOutputsMadeAlone() throws {
        let workspace = try Workspace()
        // 2274x5021, the first photo of the benchmark's large set: its 1920 px frame is 1920x4239,
        // and the 1280 px outputs (two of them, as WebP and JPEG in the benchmark) are scaled from it.
        let source = workspace.path("tall.jpg")
        try VipsCLI.run("vips", ["resize", Fixtures.path("photos/aitzgorri.jpg"), workspace.path("big.v"), "6.3"])
        try VipsCLI.run("vips", ["crop", workspace.path("big.v"), source + "[Q=90]", "0", "0", "2274", "5021"])
        let widths = [1920, 1280, 1280, 640, 320]
        try Self.expectMatchesAlone(source, chains: widths.map { #"{"op": "thumbnail", "width": \#($0), "fit": "inside"}"# }, in: workspace)
    }

    private static func expectMatchesAlone(_ source: String, chains: [String], in workspace: Workspace) throws {
        ImageProbe.startVips()
        try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true)
        let together = try Self.render(source, chains: chains, in: workspace, folder: "set")
        for (index, chain) in chains.enumerated() {
            let alone = try Self.render(source, chains: [chain], in: workspace, folder: "alone-\(index)")[0]
            let (a, b) = (try #require(ImageProbe.open(together[index])), try #require(ImageProbe.open(alone)))
            #expect(abs(a.width - b.width) <= 1 && abs(a.height - b.height) <= 1,
                    "\(chain): \(a.width)x\(a.height) in the set, \(b.width)x\(b.height) alone")
            if a.width == b.width && a.height == b.height {
                let difference = try #require(ImageProbe.meanAbsoluteDifference(together[index], alone))
                #expect(difference < 1.0, "\(chain): mean absolute difference \(difference)")
            }
        }
    }
}
