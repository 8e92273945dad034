import Foundation
import Testing
import TestSupport

private struct FileState: Equatable {
    let bytes: Data
    let modified: Date?
}

/// Every file under the workspace but those under `except`, with its bytes and modification time.
private func snapshot(_ workspace: Workspace, except: String? = nil) throws -> [String: FileState] {
    var files: [String: FileState] = [:]
    for name in workspace.files(in: ".") where except.map({ !name.hasPrefix($0) }) ?? true {
        files[name] = FileState(bytes: try Data(contentsOf: URL(fileURLWithPath: workspace.path(name))),
                                modified: workspace.modificationDate(name))
    }
    return files
}

/// The job the preview tests try: a WebP thumbnail and a large JPEG, with a state folder and a cache.
private func previewJob(_ workspace: Workspace, sources: String = #"{"path": "in", "include": ["*"]}"#) throws -> String {
    try workspace.writeJob("""
        {"version": 1, "name": "nightly", "sources": [\(sources)],
         "outputs": [{"name": "thumb", "path": "out/thumbs/{stem}.webp",
                      "chain": [{"op": "thumbnail", "width": 200, "height": 200, "fit": "cover"}], "format": {"type": "webp"}},
                     {"name": "large", "path": "out/large/{stem}.jpg",
                      "chain": [{"op": "thumbnail", "width": 640, "fit": "inside"}], "format": {"type": "jpeg", "quality": 85}}],
         "state": "state/nightly.sqlite", "cache": "cache"}
        """)
}

@Suite("runner preview: one file through the job's outputs, before a night")
struct PreviewTests {
    @Test("a local file: every output rendered into a new temporary folder with its size, dimensions and time; state and outputs untouched")
    func localFile() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        try workspace.copyFixtures(["photos/aitzgorri.jpg"], to: "elsewhere")
        let job = try previewJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        let before = try snapshot(workspace)
        #expect(before.keys.contains("state/nightly.sqlite") && before.keys.contains("out/large/fig-bowl.jpg"))

        // A file the job's sources do not find, and one they do.
        for source in ["elsewhere/aitzgorri.jpg", "in/fig-bowl.jpg"] {
            let result = try workspace.run(["preview", job, source])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            let folder = try #require(lines.first)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            #expect(folder.hasPrefix(NSTemporaryDirectory().replacingOccurrences(of: "//", with: "/")) && folder.contains("runner-preview-"),
                    "\(folder)")
            let stem = Paths(source).stem
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["\(stem).large.jpg", "\(stem).thumb.webp"])
            for (line, (output, file)) in zip(lines.dropFirst(), [("thumb", "\(stem).thumb.webp"), ("large", "\(stem).large.jpg")]) {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                let probe = try #require(ImageProbe.open(folder + "/" + file))
                #expect(fields.first == output && fields[1] == file, "\(line)")
                #expect(fields[2] == "\(probe.width)x\(probe.height)", "the dimensions of the file written: \(line)")
                #expect(probe.loader == (output == "thumb" ? "webpload" : "jpegload"))
                #expect(fields.count == 7 && fields[4].hasSuffix("B") && fields[6] == "s" && (Double(fields[5]) ?? 0) > 0, "\(line)")
            }
        }
        #expect(try snapshot(workspace) == before, "no state, lock, output or cache of the job was written")
    }

    @Test("a URL is fetched from the server with the job's headers; --output renders one output into --out; the cache stays empty")
    func url() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let server = try HTTPTestServer()
        let job = try previewJob(workspace, sources: #"{"path": "in", "include": ["*"]}, "# + """
            {"url": "\(server.url("/img/owl.jpg"))", "headers": {"X-Token": "secret"}}
            """)
        #expect(try workspace.run([job]).status == 0)
        let before = try snapshot(workspace, except: "scratch/")
        try server.reset()

        let result = try workspace.run(["preview", job, server.url("/img/owl.jpg"), "--output", "large", "--out", "scratch"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(workspace.path("scratch") + "\nlarge  owl.large.jpg  480x300  "), "\(result.stdout)")
        #expect(workspace.files(in: "scratch") == ["owl.large.jpg"], "only the output asked for, no original left behind")
        #expect(ImageProbe.open(workspace.path("scratch/owl.large.jpg")).map { [$0.width, $0.height, $0.loader] as [AnyHashable] }
            == [480, 300, "jpegload"], "not enlarged, as the job says")
        let stats = try server.stats()
        #expect(stats.counts["/img/owl.jpg"] == 1 && stats.conditional["/img/owl.jpg"] == nil, "one plain request, not a revalidation")
        #expect(stats.headers["/img/owl.jpg"]?["X-Token"] == "secret", "the job's own headers for that URL")
        #expect(try snapshot(workspace, except: "scratch/") == before, "no state, lock, output or cache of the job was written")

        let missing = try workspace.run(["preview", job, server.url("/status/404/gone.jpg")])
        #expect(missing.status == 1 && missing.stderr.contains("HTTP 404"), "\(missing.stderr)")
    }

    @Test("a corrupt file gives the decoder's message and exit 1; a missing file or an unknown output is a command-line error")
    func failures() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try workspace.copyFixtures(["broken/truncated.jpg"], to: "broken")
        let job = try previewJob(workspace)

        let corrupt = try workspace.run(["preview", job, "broken/truncated.jpg", "--out", "scratch"])
        #expect(corrupt.status == 1)
        // libjpeg's words on 8.14 ("Premature end of input file"), libvips' own on 8.16 ("premature end of JPEG image").
        for output in ["thumb", "large"] {
            #expect(corrupt.stderr.lowercased().contains("runner: \(output): decode: vipsjpeg: premature end of"), "\(corrupt.stderr)")
        }
        #expect(workspace.files(in: "scratch").isEmpty, "nothing written for a file that does not decode")

        let missing = try workspace.run(["preview", job, "in/nope.jpg"])
        #expect(missing.status == 64 && missing.stderr.hasSuffix("runner: no such file: \(workspace.path("in/nope.jpg"))\n"), "\(missing.stderr)")
        let unknown = try workspace.run(["preview", job, "in/friends.jpg", "--output", "thum"])
        #expect(unknown.status == 64 && unknown.stderr.contains("unknown output \"thum\" (did you mean \"thumb\"?)"), "\(unknown.stderr)")
        #expect(workspace.files(in: ".") == ["broken/truncated.jpg", "in/friends.jpg", "job.json"], "no state database or output")
    }
}

/// A path's parts, for naming expected files.
private struct Paths {
    let stem: String
    init(_ path: String) { stem = ((path as NSString).lastPathComponent as NSString).deletingPathExtension }
}
