import Foundation
import Testing
import TestSupport
import Support

/// Which libvips runner runs on, and that it reads and writes every format Debian 12's libvips
/// 8.14 does, whichever of the two libvips builds (`make LIBVIPS=built|system`) it was linked with.
@Suite("The libvips runner runs on")
struct LibvipsTests {
    /// The formats Debian 12's libvips 8.14 reads, each as a file made here by Debian's own `vips`
    /// (8.14, /usr/bin), so a newer libvips is proven to read what the old one wrote. SVG is written
    /// by hand, PDF too (neither has a libvips saver).
    static func samples(in workspace: Workspace) throws -> [String] {
        try FileManager.default.createDirectory(atPath: workspace.path("src"), withIntermediateDirectories: true)
        let photo = Fixtures.path("formats/photo.jpg")
        var names = ["photo.jpg"]
        try FileManager.default.copyItem(atPath: photo, toPath: workspace.path("src/photo.jpg"))
        for fileExtension in ["png", "webp", "gif", "tif", "heic", "avif", "jxl"] {
            // The libvips of this process set VIPSHOME (vips_init does) to its own prefix; Debian's is /usr.
            let made = try RunningCommand("/usr/bin/vips", arguments: ["copy", photo, workspace.path("src/photo.\(fileExtension)")],
                                          directory: workspace.root, environment: ["VIPSHOME": "/usr"]).wait()
            #expect(made.status == 0, "Debian's vips could not write .\(fileExtension): \(made.stderr)")
            names.append("photo.\(fileExtension)")
        }
        try workspace.write(##"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect width="120" height="80" fill="#c03020"/></svg>"##,
                            to: "src/drawing.svg")
        try workspace.write(Self.pdf(width: 120, height: 80), to: "src/page.pdf")
        return names + ["drawing.svg", "page.pdf"]
    }

    /// A one-page PDF filled with one colour, with a correct cross-reference table.
    static func pdf(width: Int, height: Int) -> String {
        let content = "0.75 0.19 0.13 rg 0 0 \(width) \(height) re f"
        let objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                       "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(width) \(height)] /Contents 4 0 R >>",
                       "<< /Length \(content.utf8.count) >>\nstream\n\(content)\nendstream"]
        var text = "%PDF-1.4\n"
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(text.utf8.count)
            text += "\(index + 1) 0 obj\n\(object)\nendobj\n"
        }
        let table = text.utf8.count
        text += "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        text += offsets.map { String(format: "%010d 00000 n \n", $0) }.joined()
        return text + "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(table)\n%%EOF\n"
    }

    @Test("--version names runner's and the libvips it runs on: the one the tests link, never Debian's beside it")
    func version() throws {
        let result = try RunningCommand(arguments: ["--version"], directory: "/", environment: [:]).wait()
        #expect(result.status == 0)
        #expect(result.stdout == "\(RunnerVersion.string) (libvips \(ImageProbe.libvipsVersion))\n", "\(result.stdout)")
    }

    @Test("runner formats lists every format 8.14 reads and writes as present here, and which loaders stay blocked")
    func formats() throws {
        let result = try RunningCommand(arguments: ["formats"], directory: "/", environment: [:]).wait()
        #expect(result.status == 0, "\(result.stderr)")
        let rows = Dictionary(uniqueKeysWithValues: result.stdout.split(separator: "\n").dropFirst(2).map { line in
            let columns = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            return (columns.dropLast(4).joined(separator: " "), Array(columns.suffix(4)))
        })
        let expected: [String: [String]] = [
            "JPEG": ["yes", "yes", "no", "jpeg"], "PNG": ["yes", "yes", "no", "png"], "WebP": ["yes", "yes", "no", "webp"],
            "GIF": ["yes", "yes", "no", "gif"], "TIFF": ["yes", "yes", "no", "tiff"], "HEIC": ["yes", "yes", "no", "-"],
            "AVIF": ["yes", "yes", "no", "avif"], "JPEG XL": ["yes", "yes", "yes", "jxl"], "SVG": ["yes", "no", "yes", "-"],
            "PDF": ["yes", "no", "yes", "-"],
        ]
        #expect(rows == expected, "\(result.stdout)")
        #expect(result.stdout.hasPrefix("libvips 8."))
    }

    @Test("every format Debian's libvips 8.14 writes or reads is read here, and written as every output type")
    func everyFormatReadAndWritten() throws {
        let workspace = try Workspace()
        let sources = try Self.samples(in: workspace)
        let types = ["jpeg", "png", "webp", "avif", "jxl", "tiff", "gif"]
        let outputs = types.map { type in
            #"{"name": "\#(type)", "path": "out/\#(type)/{stem}-{ext}", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "\#(type)"}}"#
        }
        // JPEG XL, SVG and PDF have loaders libvips marks untrusted (on 8.14 as on 8.16): allowed here.
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src", "include": ["*"]}], "outputs": [\#(outputs.joined(separator: ", "))], "limits": {"blockUntrusted": false}, "state": "state.sqlite"}"#)
        let result = try workspace.run([job, "-j", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\(sources.count * types.count) done, 0 failed"), "\(result.stdout)")
        for type in types {
            for source in sources {
                let stem = (source as NSString).deletingPathExtension + "-" + (source as NSString).pathExtension
                let output = workspace.path("out/\(type)/\(stem)")
                let probe = type == "jxl" ? try ImageProbe.openUntrusted(output) : ImageProbe.open(output)
                #expect(probe?.width == 64, "\(source) as \(type): \(workspace.files(in: "out/\(type)"))")
                // Every sample is the photo or a red-brown page: never a blank decode.
                #expect((probe?.average ?? 0) > 20, "\(source) as \(type) is blank")
            }
        }
    }

    @Test("a worker that has decoded a HEIC maps one libvips, the tests' own, one GLib, and libvips modules of that libvips only")
    func oneLibvips() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("src"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Fixtures.path("formats/photo.heic"), toPath: workspace.path("src/a.heic"))
        // One worker; the HEIC first (name order), then a JPEG it pauses on while the test looks at it.
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/aitzgorri.jpg"), toPath: workspace.path("src/b.jpg"))
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "outputs": [{"name": "o", "path": "out/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}}], "state": "state.sqlite"}"#)
        let pauses = try Pauses("worker.task@src/b.jpg", in: workspace)
        let run = try workspace.start([job, "-j", "1", "--log-format", "json"], environment: pauses.environment)
        // A worker maps libvips and GLib when it starts, and the modules once libvips has started.
        let paused = try #require(pauses.wait(for: "worker.task", of: run).first, "\(run.stdoutSoFar) \(run.stderrSoFar)")
        let worker = paused.pid
        let libvips = LoadedLibraries.paths(named: "libvips.so", pid: worker)
        let glib = LoadedLibraries.paths(named: "libglib-2.0.so", pid: worker)
        let modules = LoadedLibraries.paths(named: "vips-", pid: worker)
        try pauses.releaseAll()
        let result = run.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(libvips.count == 1 && libvips == LoadedLibraries.paths(named: "libvips.so"), "worker \(String(describing: worker)) maps \(libvips)")
        #expect(glib.count == 1, "\(glib)")
        let folder = libvips.first.map { ($0 as NSString).deletingLastPathComponent } ?? "?"
        #expect(modules.contains { $0.hasSuffix("/vips-heif.so") }, "\(modules)")
        #expect(modules.allSatisfy { $0.hasPrefix(folder + "/vips-modules-") }, "\(modules) beside \(folder)")
    }
}
