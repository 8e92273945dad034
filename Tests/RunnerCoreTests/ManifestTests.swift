import Foundation
@testable import RunnerCore
import Testing
import TestSupport

@Suite("Manifest: job files decode into fully defaulted values")
struct ManifestTests {
    let minimal = """
    {"version": 1, "sources": [{"path": "photos"}],
     "outputs": [{"name": "t", "path": "../out/{stem}.jpg", "chain": [{"op": "blur", "sigma": 1.50}], "format": {"type": "jpeg"}}]}
    """

    @Test("defaults are filled in and paths resolve against the job file's folder")
    func defaults() throws {
        let job = try Job.parse(text: minimal, filePath: "/srv/jobs/nightly.json")
        #expect(job.name == "nightly")
        #expect(job.statePath == "/srv/jobs/nightly.sqlite")
        #expect(job.concurrency.process == ProcessInfo.processInfo.activeProcessorCount)
        #expect(job.concurrency.threadsPerImage == 1)
        #expect(job.limits.maxPixels == 268_402_689)
        #expect(job.limits.failOn == .error)
        #expect(job.limits.blockUntrustedLoaders)
        #expect(job.sources == [.path("/srv/jobs/photos", recursive: false, include: Job.defaultImagePatterns, exclude: [])])
        #expect(job.outputs[0].template.root == "/srv/out")
        #expect(job.outputs[0].autorotate)
        #expect(job.outputs[0].encoder.identifier == "jpeg(quality:80,progressive:false,chromaSubsampling:auto,optimizeCoding:false)")
        #expect(job.outputs[0].metadata == .strip && job.outputs[0].colourSpace == .srgb && job.limits.frames == 300)
    }

    @Test("identifiers spell out every parameter in canonical form")
    func identifiers() throws {
        func chain(_ steps: String) throws -> String {
            try Job.parse(text: """
                {"version": 1, "sources": [{"path": "p"}],
                 "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [\(steps)], "format": {"type": "jpeg"}}]}
                """, filePath: "/j/job.json").outputs[0].chain.identifier
        }
        #expect(try chain(#"{"op": "blur", "sigma": 1.50}"#) == "blur(sigma:1.5)")
        #expect(try chain(#"{"op": "blur", "sigma": 2}"#) == (try chain(#"{"op": "blur", "sigma": 2.0}"#)))
        #expect(try chain(#"{"op": "blur", "sigma": 2}"#) != (try chain(#"{"op": "blur", "sigma": 3}"#)))
        #expect(try chain(#"{"op": "sharpen"}"#) == (try chain(#"{"op": "sharpen", "sigma": 0.5, "m1": 0, "m2": 3}"#)))
        #expect(try chain(#"{"op": "thumbnail", "width": 256, "height": 256}, {"op": "grayscale"}"#)
            == "thumbnail(width:256,height:256,fit:cover,position:centre,enlarge:false)|>grayscale()")
        #expect(try chain(#"{"op": "crop", "width": 10, "height": 20}"#) == "crop(width:10,height:20,gravity:centre)")
    }

    @Test("the recipe (and so the fingerprint) changes with chain, format or load options")
    func recipe() throws {
        func recipe(_ output: String) throws -> String {
            try Job.parse(text: #"{"version": 1, "sources": [{"path": "p"}], "outputs": [\#(output)]}"#,
                          filePath: "/j/job.json").outputs[0].recipe
        }
        let base = try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}"#)
        #expect(base != (try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg", "quality": 81}}"#)))
        #expect(base != (try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}, "autorotate": false}"#)))
        #expect(base == (try recipe(#"{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg", "quality": 80}}"#)))
    }

    @Test("errors name the exact location", arguments: [
        (#"{"version": 1, "sources": [], "outputs": []}"#, "sources: must list at least one source"),
        (#"{"version": 1, "sources": [{"path": "a", "glob": "b"}], "outputs": []}"#, "sources[0]: must have exactly one of path, glob, list, url"),
        (#"{"version": 1, "sources": [{"path": "a", "recursive": "yes"}], "outputs": []}"#, "sources[0].recursive: must be true or false, not a string"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "rotate", "angle": "45"}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].angle: must be a number, not a string"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "height": 10, "fit": "cover"}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].fit: cover needs both width and height"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 10, "height": 10, "background": "red"}], "format": {"type": "jpeg"}}]}"#,
         "outputs[0].chain[0].background: must be a colour as #rgb, #rrggbb or #rrggbbaa, not \"red\""),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}, {"name": "t", "path": "p/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}"#,
         "outputs[1].name: \"t\" is used by another output"),
        (#"{"version": 1, "sources": [{"path": "a"}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}], "concurrency": {"process": 0}}"#,
         "concurrency.process: must be between 1 and 256"),
    ])
    func errors(text: String, message: String) {
        #expect(throws: JobFileError.self) { try Job.parse(text: text, filePath: "/j/job.json") }
        do {
            _ = try Job.parse(text: text, filePath: "/j/job.json")
        } catch {
            #expect("\(error)" == message)
        }
    }

    @Test("colours parse in all three spellings")
    func colours() {
        #expect(Colour(hex: "#f00")?.canonical == "#ff0000ff")
        #expect(Colour(hex: "#00FF00")?.canonical == "#00ff00ff")
        #expect(Colour(hex: "#0000ff80")?.alpha == 128)
        #expect(Colour(hex: "#12") == nil)
        #expect(Colour(hex: "00ff00") == nil)
    }
}
