import Foundation
import Testing
import TestSupport

/// Stripping is a privacy promise: a published thumbnail must not carry the photo's GPS
/// position, author or profile. Checked on the bytes runner writes, container by container.
@Suite("Metadata is stripped from every format's bytes")
struct StripMetadataTests {
    static let formats = ["jpeg", "png", "webp", "avif", "jxl", "tiff", "gif", "auto"]
    static let secrets = ["Secret place", "Jane Artist", "Copyright Jane", "XMPSecret"]

    /// A photo with an ICC profile, EXIF (description, artist, copyright, GPS) and XMP, as a JPEG
    /// and converted by libvips (which keeps metadata by default) to every format runner reads.
    static func privateSources(in workspace: Workspace) throws -> [String] {
        try FileManager.default.createDirectory(atPath: workspace.path("src"), withIntermediateDirectories: true)
        let base = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("formats/adobergb.jpg"))))
        let jpeg = JPEGMetadata.inserting([
            (JPEGMetadata.app1, JPEGMetadata.exif(description: "Secret place", artist: "Jane Artist", copyright: "Copyright Jane")),
            (JPEGMetadata.app1, JPEGMetadata.xmp(#"<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:creator="XMPSecret"/></rdf:RDF></x:xmpmeta>"#)),
        ], into: base)
        try Data(jpeg).write(to: URL(fileURLWithPath: workspace.path("src/private.jpg")))
        for fileExtension in ["png", "webp", "tif", "gif", "avif", "heic"] {
            try VipsCLI.run("vips", ["copy", workspace.path("src/private.jpg"), workspace.path("src/private.\(fileExtension)")])
        }
        return try FileManager.default.contentsOfDirectory(atPath: workspace.path("src")).sorted()
    }

    @Test("with the default strip, no output of any format or auto outcome has EXIF, GPS, XMP, ICC or text")
    func stripped() throws {
        let workspace = try Workspace()
        let sources = try Self.privateSources(in: workspace)
        // The sources really carry what must not leak (GIF stores none; libvips writes no EXIF into
        // TIFF; HEIF's EXIF item is not opened, so its GPS is not seen).
        for source in sources {
            let blocks = try WrittenMetadata.blocks(inFile: workspace.path("src/" + source))
            let expected: Set<WrittenMetadata.Block> = switch (source as NSString).pathExtension {
            case "gif": []
            case "tif": [.xmp, .icc]
            case "avif", "heic": [.exif, .xmp, .icc]
            default: [.exif, .gps, .xmp, .icc]
            }
            #expect(blocks.isSuperset(of: expected), "source \(source): \(blocks)")
        }
        let chains = ["decode": #"{"op": "resize", "width": 160}"#, "thumbnail": #"{"op": "thumbnail", "width": 160, "fit": "inside"}"#]
        var outputs: [String] = []
        for format in Self.formats {
            for (name, chain) in chains {
                outputs.append(#"{"name": "\#(format)-\#(name)", "path": "out/\#(format)-\#(name)/{stem}-{ext}", "chain": [\#(chain)], "format": {"type": "\#(format)"}}"#)
            }
        }
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "outputs": [\#(outputs.joined(separator: ", "))], "state": "state.sqlite"}"#)
        let result = try workspace.run([job, "-j", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        let written = workspace.files(in: "out")
        #expect(written.count == sources.count * Self.formats.count * chains.count)
        for file in written {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/" + file)))
            let blocks = try WrittenMetadata.blocks(in: [UInt8](bytes))
            #expect(blocks.isEmpty, "\(file) carries \(blocks.sorted { $0.rawValue < $1.rawValue })")
            for secret in Self.secrets {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) contains \"\(secret)\"")
            }
        }
    }

    @Test("keepIcc keeps the profile and nothing private: no GPS, author, description or XMP")
    func keepIcc() throws {
        let workspace = try Workspace()
        _ = try Self.privateSources(in: workspace)
        // JPEG XL's profile is in its codestream's header, which WrittenMetadata does not read (below).
        let outputs = Self.formats.filter { !["gif", "tiff", "jxl"].contains($0) }.map { format in
            #"{"name": "\#(format)", "path": "out/\#(format)/{stem}-{ext}", "chain": [{"op": "resize", "width": 160}], "format": {"type": "\#(format)"}, "keepIcc": true}"#
        }
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "outputs": [\#(outputs.joined(separator: ", "))], "state": "state.sqlite"}"#)
        let result = try workspace.run([job, "-j", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        for file in workspace.files(in: "out") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: workspace.path("out/" + file)))
            let blocks = try WrittenMetadata.blocks(in: [UInt8](bytes))
            // The GIF source has no profile to keep.
            #expect(blocks.contains(.icc) || file.hasSuffix("-gif"), "\(file) lost its profile")
            // libvips adds a small EXIF block of its own (resolution) when it keeps anything.
            #expect(blocks.isSubset(of: [.icc, .exif]), "\(file) carries \(blocks.sorted { $0.rawValue < $1.rawValue })")
            for secret in Self.secrets {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) contains \"\(secret)\"")
            }
        }
    }

    @Test("jxl: keepMetadata writes EXIF and XMP boxes (libvips 8.16; 8.14's jxlsave writes neither), keepIcc neither")
    func jpegXL() throws {
        let workspace = try Workspace()
        _ = try Self.privateSources(in: workspace)
        let outputs = [("all", #", "keepMetadata": true"#), ("icc", #", "keepIcc": true"#)].map { name, keep in
            #"{"name": "\#(name)", "path": "out/\#(name)/{stem}-{ext}.jxl", "chain": [{"op": "resize", "width": 160}], "format": {"type": "jxl"}\#(keep)}"#
        }
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src/private.jpg"}], "outputs": [\#(outputs.joined(separator: ", "))], "state": "state.sqlite"}"#)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        let all = try WrittenMetadata.blocks(inFile: workspace.path("out/all/private-jpg.jxl"))
        #expect(all == (ImageProbe.libvipsVersion.hasPrefix("8.14.") ? [] : [.exif, .xmp]), "\(all)")
        #expect(try WrittenMetadata.blocks(inFile: workspace.path("out/icc/private-jpg.jxl")).isEmpty)
        // Written while untrusted loaders are blocked (the default): JPEG XL, and it decodes.
        #expect(ImageSignature.format(ofFile: workspace.path("out/all/private-jpg.jxl")) == .jpegXL)
        #expect(try ImageProbe.openUntrusted(workspace.path("out/all/private-jpg.jxl"))?.width == 160)
    }
}
