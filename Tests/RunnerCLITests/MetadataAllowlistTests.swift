import Foundation
import Testing
import TestSupport

/// `metadata.keep`: an output carries exactly the fields it names, in every format that can hold
/// metadata, with the source's values; everything else of the source's (GPS, serial numbers, the
/// city, keywords, maker notes) stays out. Checked with exiftool, an independent reader, on the
/// bytes runner writes, on whichever libvips this build links (CI runs it on 8.16 and on 8.14).
@Suite("metadata.keep writes exactly the chosen fields")
struct MetadataAllowlistTests {
    static let formats = ["jpeg": "jpg", "png": "png", "webp": "webp", "avif": "avif", "tiff": "tif"]

    /// Private values of the source that no output in these tests names: none may appear.
    static let secrets = ["SN123456", "LS98765", "Jane Owner", "London", "Canon", "EOS R5", "RF 24-70", "Licensed to", "dusk", "Lake"]

    /// A photo with an ICC profile (Adobe RGB) and, written by exiftool, EXIF (artist, copyright,
    /// capture time, exposure, camera, serials, owner, GPS), XMP (the same and more) and IPTC.
    static func privateSource(in workspace: Workspace) throws -> String {
        try FileManager.default.createDirectory(atPath: workspace.path("src"), withIntermediateDirectories: true)
        let path = workspace.path("src/photo.jpg")
        try FileManager.default.copyItem(atPath: Fixtures.path("formats/adobergb.jpg"), toPath: path)
        try ExifTool.write([
            "-EXIF:Artist=Jane Doe", "-EXIF:Copyright=Copyright Jane Doe (Studio)", "-EXIF:ImageDescription=A Lake at dusk",
            "-EXIF:Make=Canon", "-EXIF:Model=EOS R5", "-ExifIFD:SerialNumber=SN123456", "-EXIF:LensSerialNumber=LS98765",
            "-EXIF:LensModel=RF 24-70", "-ExifIFD:OwnerName=Jane Owner", "-EXIF:DateTimeOriginal=2024:06:01 18:30:00",
            "-EXIF:FNumber=2.8", "-EXIF:ExposureTime=1/250", "-EXIF:ISO=200",
            "-EXIF:GPSLatitude=51.5", "-EXIF:GPSLatitudeRef=N", "-EXIF:GPSLongitude=0.12", "-EXIF:GPSLongitudeRef=W",
            "-XMP-dc:Creator=Jane Doe", "-XMP-dc:Rights=Copyright Jane Doe (Studio)", "-XMP-photoshop:Credit=Jane Doe / Agency",
            "-XMP-exif:DateTimeOriginal=2024:06:01 18:30:00", "-XMP-aux:SerialNumber=SN123456", "-XMP-exif:GPSLatitude=51.5 N",
            "-XMP-dc:Title=Lake", "-XMP-dc:Subject=lake", "-XMP-dc:Subject=dusk", "-XMP-xmpRights:UsageTerms=Licensed to example.com only",
            "-XMP-photoshop:City=London",
            "-IPTC:By-line=Jane Doe", "-IPTC:CopyrightNotice=Copyright Jane Doe (Studio)", "-IPTC:Credit=Jane Doe / Agency",
            "-IPTC:Keywords=lake", "-IPTC:Keywords=dusk", "-IPTC:Caption-Abstract=A Lake at dusk", "-IPTC:ObjectName=Lake",
            "-IPTC:DateCreated=2024:06:01", "-IPTC:TimeCreated=18:30:00+01:00", "-IPTC:City=London",
        ], into: path)
        return path
    }

    /// Groups exiftool puts metadata in (not the container's own structure).
    static func isMetadata(_ key: String) -> Bool {
        ["IFD0:", "IFD1:", "ExifIFD:", "GPS:", "InteropIFD:", "XMP-", "IPTC:", "Photoshop:", "MakerNotes:"].contains { key.hasPrefix($0) }
    }

    /// Tags libvips writes into any EXIF block it builds (resolution, orientation, size, versions):
    /// its own, though their values may happen to equal the source's.
    static let libvipsOwn: Set<String> = ["IFD0:Orientation", "IFD0:XResolution", "IFD0:YResolution", "IFD0:ResolutionUnit",
                                          "IFD0:YCbCrPositioning", "ExifIFD:ExifVersion", "ExifIFD:ComponentsConfiguration",
                                          "ExifIFD:FlashpixVersion", "ExifIFD:ColorSpace", "IPTC:ApplicationRecordVersion"]

    /// Where each format keeps what it can: EXIF (libvips writes none into TIFF, nor into PNG
    /// before 8.15), XMP everywhere, IPTC in JPEG and TIFF.
    static func carriesEXIF(_ format: String) -> Bool {
        format != "tiff" && !(format == "png" && ImageProbe.libvipsVersion.hasPrefix("8.14."))
    }

    static func carriesIPTC(_ format: String) -> Bool { format == "jpeg" || format == "tiff" }

    /// Checks one output: every `expected` tag present with the source's value, and no other
    /// metadata tag of the source's (same name, same value) there, nor any secret in its bytes.
    static func check(_ file: String, expected: [String], source: [String: String], secrets: [String]) throws {
        let tags = try ExifTool.tags(of: file)
        for key in expected {
            #expect(tags[key] != nil && tags[key] == source[key], "\(file): \(key) is \(tags[key] ?? "missing"), the source's \(source[key] ?? "none")")
        }
        for (key, value) in tags where isMetadata(key) && source[key] == value && !expected.contains(key) && !libvipsOwn.contains(key) {
            Issue.record("\(file) carries the source's \(key) (\(value))")
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        for secret in secrets {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) contains \"\(secret)\"")
        }
    }

    static func outputs(_ name: String, keep: String) -> [String] {
        formats.sorted { $0.key < $1.key }.map { format, ext in
            #"{"name": "\#(name)-\#(format)", "path": "out/\#(name)/{stem}.\#(ext)", "chain": [{"op": "resize", "width": 160}], "#
                + #""format": {"type": "\#(format)"}, "metadata": {"keep": \#(keep)}}"#
        }
    }

    @Test("credit fields and the profile: present with the source's values in JPEG, PNG, WebP, AVIF and TIFF; nothing else of the source's")
    func creditFields() throws {
        let workspace = try Workspace()
        let source = try ExifTool.tags(of: try Self.privateSource(in: workspace))
        // The source really carries what must stay out.
        for key in ["GPS:GPSLatitude", "ExifIFD:SerialNumber", "ExifIFD:OwnerName", "XMP-aux:SerialNumber", "IPTC:City", "IPTC:Keywords"] {
            #expect(source[key] != nil, "the source lacks \(key)")
        }
        let outputs = Self.outputs("credit", keep: #"["copyright", "artist", "credit", "datetime", "icc"]"#)
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "outputs": [\#(outputs.joined(separator: ", "))], "state": "state.sqlite"}"#)
        let result = try workspace.run([job, "-j", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        for (format, ext) in Self.formats {
            var expected = ["XMP-dc:Creator", "XMP-dc:Rights", "XMP-photoshop:Credit", "XMP-exif:DateTimeOriginal"]
            if Self.carriesEXIF(format) { expected += ["IFD0:Artist", "IFD0:Copyright", "ExifIFD:DateTimeOriginal"] }
            if Self.carriesIPTC(format) {
                expected += ["IPTC:By-line", "IPTC:CopyrightNotice", "IPTC:Credit", "IPTC:DateCreated", "IPTC:TimeCreated"]
            }
            let file = workspace.path("out/credit/photo.\(ext)")
            try Self.check(file, expected: expected, source: source, secrets: Self.secrets)
            // The profile is kept (sRGB's: the pixels were converted to sRGB).
            #expect(try ExifTool.tags(of: file)["ICC_Profile:ProfileDescription"] != nil, "\(format) lost its profile")
        }
    }

    @Test("gps, serial, camera and location are kept only when named; the profile only with icc")
    func privateFieldsWhenNamed() throws {
        let workspace = try Workspace()
        let source = try ExifTool.tags(of: try Self.privateSource(in: workspace))
        let outputs = Self.outputs("where", keep: #"["gps", "serial", "camera", "location"]"#)
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "outputs": [\#(outputs.joined(separator: ", "))], "state": "state.sqlite"}"#)
        let result = try workspace.run([job, "-j", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        for (format, ext) in Self.formats {
            var expected = ["XMP-aux:SerialNumber", "XMP-exif:GPSLatitude", "XMP-photoshop:City"]
            if Self.carriesEXIF(format) {
                expected += ["GPS:GPSLatitude", "GPS:GPSLatitudeRef", "GPS:GPSLongitude", "GPS:GPSLongitudeRef",
                             "ExifIFD:SerialNumber", "ExifIFD:LensSerialNumber", "IFD0:Make", "IFD0:Model"]
            }
            if Self.carriesIPTC(format) { expected += ["IPTC:City"] }
            let file = workspace.path("out/where/photo.\(ext)")
            try Self.check(file, expected: expected, source: source, secrets: ["Jane Owner", "RF 24-70", "Licensed to", "dusk", "Jane Doe"])
            #expect(try ExifTool.tags(of: file)["ICC_Profile:ProfileDescription"] == nil, "\(format) kept a profile icc does not name")
        }
    }

    @Test("a TIFF source's bare IPTC records and a PNG source's EXIF and XMP reach a JPEG output, cut to the chosen fields")
    func otherSourceContainers() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("src"), withIntermediateDirectories: true)
        let sources = ["formats/photo.tif": "src/scan.tif", "formats/photo.png": "src/shot.png"]
        for (fixture, path) in sources {
            try FileManager.default.copyItem(atPath: Fixtures.path(fixture), toPath: workspace.path(path))
            try ExifTool.write([
                "-EXIF:Artist=Jane Doe", "-EXIF:Copyright=Copyright Jane Doe (Studio)", "-ExifIFD:SerialNumber=SN123456",
                "-EXIF:GPSLatitude=51.5", "-EXIF:GPSLatitudeRef=N", "-XMP-dc:Creator=Jane Doe",
                "-XMP-dc:Rights=Copyright Jane Doe (Studio)", "-XMP-photoshop:Credit=Jane Doe / Agency", "-XMP-aux:SerialNumber=SN123456",
                "-XMP-photoshop:City=London", "-IPTC:By-line=Jane Doe", "-IPTC:CopyrightNotice=Copyright Jane Doe (Studio)",
                "-IPTC:Credit=Jane Doe / Agency", "-IPTC:City=London",
            ], into: workspace.path(path))
        }
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "state": "state.sqlite", "outputs": ["#
            + #"{"name": "jpeg", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}, "metadata": {"keep": ["copyright", "artist", "credit"]}}]}"#)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr)")
        let xmp = ["XMP-dc:Creator", "XMP-dc:Rights", "XMP-photoshop:Credit"]
        // libvips reads no EXIF from a TIFF, and no IPTC from a PNG (exiftool puts it in a text chunk).
        let expected = ["src/scan.tif": xmp + ["IPTC:By-line", "IPTC:CopyrightNotice", "IPTC:Credit"],
                        "src/shot.png": xmp + ["IFD0:Artist", "IFD0:Copyright"]]
        for (source, keys) in expected {
            let output = workspace.path("out/" + ((source as NSString).lastPathComponent as NSString).deletingPathExtension + ".jpg")
            try Self.check(output, expected: keys, source: try ExifTool.tags(of: workspace.path(source)), secrets: ["SN123456", "London"])
        }
    }

    /// Real photos from Debian's forensics-samples-files (installed by `make deps`): a Canon
    /// camera's JPEG (maker notes, an EXIF thumbnail) and a phone's (GPS, an EXIF thumbnail,
    /// "Rotate 180", so its thumbnail is upside down beside any output).
    static let cameraPhoto = "/usr/share/forensics-samples/original-files/pic1/IMG_1054.JPG"
    static let phonePhoto = "/usr/share/forensics-samples/original-files/pic2/IMG_20200124_231153.jpg"

    /// exiftool groups and tag names that hold an image of the source, or describe one.
    static func isEmbeddedImage(_ key: String) -> Bool {
        let group = key.prefix { $0 != ":" }
        let name = key.drop { $0 != ":" }.dropFirst()
        return ["IFD1", "MakerNotes", "Canon", "Nikon", "Sony", "Apple", "Samsung", "MPF0", "MPImage1", "MPImage2"].contains(String(group))
            || ["ThumbnailImage", "PreviewImage", "PhotoshopThumbnail", "ThumbnailTIFF", "MPImage2", "Thumbnails"].contains(String(name))
            || name.hasPrefix("Thumbnail") && group.hasPrefix("XMP")
    }

    @Test("no output carries an image of the source: no EXIF thumbnail, maker notes, XMP or Photoshop thumbnail, with keep lists or keepMetadata, in any format")
    func noEmbeddedImages() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("src"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.phonePhoto, toPath: workspace.path("src/phone.jpg"))
        // The camera photo, with a Photoshop and an XMP thumbnail planted beside its own EXIF one.
        let camera = workspace.path("src/camera.jpg")
        try FileManager.default.copyItem(atPath: Self.cameraPhoto, toPath: camera)
        let planted = workspace.path("planted.jpg")
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/aitzgorri.jpg"), toPath: planted)
        try ExifTool.write(["-all=", "-Artist=Jane Doe", "-Copyright=Jane Doe"], into: planted)
        let small = workspace.path("small.jpg")
        _ = try RunningCommand("/usr/bin/vipsthumbnail", arguments: [planted, "-s", "64", "-o", small], directory: workspace.root, environment: [:]).wait()
        try ExifTool.write(["-PhotoshopThumbnail<=\(small)", "-XMP-xmp:ThumbnailImage<=\(small)", "-XMP-dc:Creator=Jane Doe"], into: camera)

        let sources = ["phone": try ExifTool.tags(of: workspace.path("src/phone.jpg")), "camera": try ExifTool.tags(of: camera)]
        // The sources really carry what must stay out.
        #expect(sources["phone"]?["IFD1:ThumbnailImage"] != nil && sources["phone"]?["GPS:GPSLatitude"] != nil)
        for key in ["IFD1:ThumbnailImage", "Photoshop:PhotoshopThumbnail", "XMP-xmp:Thumbnails", "Canon:CanonImageSize"] {
            #expect(sources["camera"]?[key] != nil, "the camera photo lacks \(key)")
        }
        let thumbnails = try ["phone", "camera"].flatMap { name in
            try ["ThumbnailImage", "PhotoshopThumbnail"].map { try ExifTool.binary($0, of: workspace.path("src/\(name).jpg")) }
        }.filter { !$0.isEmpty } + [try Data(contentsOf: URL(fileURLWithPath: small))]
        #expect(thumbnails.count == 4)

        let keep = #"["artist", "copyright", "datetime", "camera", "lens", "exposure", "gps", "serial", "icc"]"#
        let outputs = Self.outputs("keep", keep: keep) + Self.formats.sorted { $0.key < $1.key }.map { format, ext in
            #"{"name": "all-\#(format)", "path": "out/all/{stem}.\#(ext)", "chain": [{"op": "resize", "width": 160}], "#
                + #""format": {"type": "\#(format)"}, "keepMetadata": true}"#
        }
        let job = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "outputs": [\#(outputs.joined(separator: ", "))], "state": "state.sqlite"}"#)
        let result = try workspace.run([job, "-j", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        for (name, source) in sources {
            for (format, ext) in Self.formats {
                for set in ["keep", "all"] {
                    let file = workspace.path("out/\(set)/\(name).\(ext)")
                    let tags = try ExifTool.tags(of: file)
                    // A TIFF's JPEG-compressed strip is the output itself (exiftool calls it IFD0's PreviewImage).
                    for key in tags.keys where Self.isEmbeddedImage(key) && !(format == "tiff" && key.hasPrefix("IFD0:PreviewImage")) {
                        Issue.record("\(set)/\(name).\(ext) carries \(key) (\(tags[key] ?? ""))")
                    }
                    let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
                    for thumbnail in thumbnails where bytes.range(of: thumbnail) != nil {
                        Issue.record("\(set)/\(name).\(ext) holds a thumbnail of a source byte for byte")
                    }
                    // The fields asked for are there, with the source's values.
                    if Self.carriesEXIF(format) {
                        let expected = name == "phone" ? ["GPS:GPSLatitude", "IFD0:Make", "ExifIFD:DateTimeOriginal"] : ["IFD0:Model", "ExifIFD:FNumber"]
                        for key in expected {
                            #expect(tags[key] != nil && tags[key] == source[key], "\(set)/\(name).\(ext): \(key) is \(tags[key] ?? "missing"), the source's \(source[key] ?? "none")")
                        }
                    }
                }
            }
        }
    }

    @Test("the allowlist is part of the recipe: changing it re-renders only the outputs it changes; order and the keepIcc spelling do not count")
    func allowlistInRecipe() throws {
        let workspace = try Workspace()
        _ = try Self.privateSource(in: workspace)
        func job(credit: String, place: String, icc: String) -> String {
            #"{"version": 1, "sources": [{"path": "src"}], "state": "state.sqlite", "outputs": ["#
                + #"{"name": "credit", "path": "out/credit/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}, "metadata": {"keep": \#(credit)}}, "#
                + #"{"name": "place", "path": "out/place/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}, "metadata": {"keep": \#(place)}}, "#
                + #"{"name": "icc", "path": "out/icc/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}\#(icc)}]}"#
        }
        let path = try workspace.writeJob(job(credit: #"["artist", "copyright"]"#, place: #"["gps"]"#, icc: #", "keepIcc": true"#))
        #expect(try workspace.run([path]).status == 0)
        let creditBefore = workspace.modificationDate("out/credit/photo.jpg")
        #expect(try ExifTool.tags(of: workspace.path("out/place/photo.jpg"))["ExifIFD:SerialNumber"] == nil)

        // Reordered, and keepIcc spelled as the list it stands for: the same recipes.
        try workspace.writeJob(job(credit: #"["copyright", "artist", "artist"]"#, place: #"["gps"]"#, icc: #", "metadata": {"keep": ["icc"]}"#))
        let same = try workspace.run([path])
        #expect(same.stdout.contains("0 done, 0 failed, 3 up to date"), "\(same.stdout)")

        // A field added to one output re-renders that output alone, and the file now carries it.
        try workspace.writeJob(job(credit: #"["copyright", "artist"]"#, place: #"["gps", "serial"]"#, icc: #", "keepIcc": true"#))
        let changed = try workspace.run([path])
        #expect(changed.stdout.contains("1 done, 0 failed, 2 up to date"), "\(changed.stdout)")
        #expect(workspace.modificationDate("out/credit/photo.jpg") == creditBefore)
        #expect(try ExifTool.tags(of: workspace.path("out/place/photo.jpg"))["ExifIFD:SerialNumber"] == "SN123456")
    }

    @Test("an unknown field, or metadata beside keepMetadata, is a job-file error naming the key; earlier outputs stay")
    func jobFileErrors() throws {
        let workspace = try Workspace()
        _ = try Self.privateSource(in: workspace)
        func job(_ extra: String) -> String {
            #"{"version": 1, "sources": [{"path": "src"}], "state": "state.sqlite", "outputs": ["#
                + #"{"name": "a", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}\#(extra)}]}"#
        }
        let path = try workspace.writeJob(job(#", "metadata": {"keep": ["copyright"]}"#))
        #expect(try workspace.run([path]).status == 0)
        let before = workspace.modificationDate("out/photo.jpg")

        try workspace.writeJob(job(#", "metadata": {"keep": ["copyright", "gsp"]}"#))
        let unknown = try workspace.run([path])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("outputs[0].metadata.keep[1]") && unknown.stderr.contains("\"gsp\""), "\(unknown.stderr)")

        try workspace.writeJob(job(#", "keepMetadata": true, "metadata": {"keep": ["gps"]}"#))
        let both = try workspace.run([path])
        #expect(both.status == 2)
        #expect(both.stderr.contains("outputs[0].metadata: give metadata or keepMetadata/keepIcc, not both"), "\(both.stderr)")

        try workspace.writeJob(job(#", "metadata": {"keep": ["gps"], "drop": ["serial"]}"#))
        let extraKey = try workspace.run([path])
        #expect(extraKey.status == 2 && extraKey.stderr.contains(#"outputs[0].metadata: unknown key "drop""#), "\(extraKey.stderr)")

        #expect(workspace.modificationDate("out/photo.jpg") == before)
    }

    @Test("a typo in metadata.keep names the key and the nearest field, as one in derive does; exit 2 before any work")
    func typoGetsSuggestion() throws {
        let workspace = try Workspace()
        _ = try Self.privateSource(in: workspace)
        let path = try workspace.writeJob(#"{"version": 1, "sources": [{"path": "src"}], "state": "state.sqlite", "outputs": ["#
            + #"{"name": "a", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}, "metadata": {"keep": ["artist", "copyrigth"]}}]}"#)
        for command in [[path], ["validate", path]] {
            let result = try workspace.run(command)
            #expect(result.status == 2, "\(command): \(result.stderr)")
            #expect(result.stderr.contains(#"outputs[0].metadata.keep[1]: unknown field "copyrigth" (did you mean "copyright"?)"#), "\(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state.sqlite")) && workspace.files(in: "out").isEmpty, "nothing was run")
    }
}
