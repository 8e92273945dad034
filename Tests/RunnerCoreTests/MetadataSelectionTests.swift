import Foundation
import Testing
import TestSupport

/// The pieces `metadata.keep` rebuilds metadata with, on inputs the exiftool-written sources of
/// MetadataAllowlistTests do not have: XMP written by other tools (other prefixes, properties as
/// attributes), and both libvips versions' spelling of EXIF text.
@Suite("Metadata selection: XMP by namespace, EXIF text as libvips spells it")
struct MetadataSelectionTests {
    @Test("XMP properties are matched by namespace, as attributes or elements, whatever the prefix; the rest is dropped")
    func xmpByNamespace() throws {
        let source = #"""
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
            <rdf:Description rdf:about="" xmlns:d="http://purl.org/dc/elements/1.1/" xmlns:ps="http://ns.adobe.com/photoshop/1.0/"
              xmlns:e="http://ns.adobe.com/exif/1.0/" ps:Credit="Jane &amp; Co" ps:City="London" e:GPSLatitude="51,30.0N">
            <d:rights><rdf:Alt><rdf:li xml:lang="x-default">© Jane &lt;Doe&gt;</rdf:li></rdf:Alt></d:rights>
            <d:subject><rdf:Bag><rdf:li>secret keyword</rdf:li></rdf:Bag></d:subject>
            </rdf:Description></rdf:RDF></x:xmpmeta>
            """#
        let kept = try #require(XMPPacket.keeping(["dc:rights", "photoshop:Credit"], of: Data(source.utf8)))
        let workspace = try Workspace()
        let file = workspace.path("kept.xmp")
        try kept.write(to: URL(fileURLWithPath: file))
        let tags = try ExifTool.tags(of: file)
        #expect(tags["XMP-dc:Rights"] == "© Jane <Doe>" && tags["XMP-photoshop:Credit"] == "Jane & Co", "\(tags)")
        #expect(!tags.keys.contains { $0.contains("GPS") || $0.contains("City") || $0.contains("Subject") }, "\(tags)")
        #expect(XMPPacket.keeping(["dc:title"], of: Data(source.utf8)) == nil)
        #expect(XMPPacket.keeping(["dc:rights"], of: Data("<x:xmpmeta><unclosed".utf8)) == nil)
    }

    @Test("EXIF text comes back whole from both libvips spellings, parentheses included; numbers are left as they are")
    func exifText() {
        // 8.16: the value, then the value again in the tail.
        #expect(ExifText.raw("Jane (Studio) (Jane (Studio), ASCII, 14 components, 14 bytes)") == "Jane (Studio)")
        #expect(ExifText.raw("Copyright Jane  (Copyright Jane , ASCII, 15 components, 15 bytes)") == "Copyright Jane")
        // 8.14: libexif's reading of Copyright (photographer and editor) in the tail.
        #expect(ExifText.raw("Copyright Jane (Copyright Jane (Photographer) - [None] (Editor), ASCII, 15 components, 15 bytes)")
                == "Copyright Jane")
        #expect(ExifText.raw("14/5 (f/2.8, Rational, 1 components, 8 bytes)") == nil)
        #expect(ExifText.settable("Jane (Studio)") == "Jane (Studio) ()")
    }
}
