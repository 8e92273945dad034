import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XMP packet cut down to the properties a list names: each `rdf:Description`'s properties
/// (written as attributes or as elements, with whatever structure they hold) are matched by
/// namespace and name, never by the prefix the source chose, and the kept ones are written into
/// a packet of their own. A packet that does not parse keeps nothing: what cannot be read cannot
/// be checked.
package enum XMPPacket {
    /// The namespaces `MetadataFieldMap` names properties in, by the prefix it uses.
    package static let namespaces: [String: String] = [
        "dc": "http://purl.org/dc/elements/1.1/",
        "xmp": "http://ns.adobe.com/xap/1.0/",
        "xmpRights": "http://ns.adobe.com/xap/1.0/rights/",
        "photoshop": "http://ns.adobe.com/photoshop/1.0/",
        "tiff": "http://ns.adobe.com/tiff/1.0/",
        "exif": "http://ns.adobe.com/exif/1.0/",
        "exifEX": "http://cipa.jp/exif/1.0/",
        "aux": "http://ns.adobe.com/exif/1.0/aux/",
        "Iptc4xmpCore": "http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/",
    ]
    static let rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let xml = "http://www.w3.org/XML/1998/namespace"

    /// The packet with only the properties `names` lists (`prefix:Name`, or `prefix:Stem*`); nil
    /// when none is left or the packet does not parse.
    package static func keeping(_ names: [String], of data: Data) -> Data? {
        guard !names.isEmpty else { return nil }
        let prefixes = Dictionary(uniqueKeysWithValues: namespaces.map { ($0.value, $0.key) })
        return filtered(data) { node in
            guard let prefix = prefixes[node.namespace] else { return false }
            let name = "\(prefix):\(node.name)"
            return names.contains { $0.hasSuffix("*") ? name.hasPrefix($0.dropLast()) : name == $0 }
        }
    }

    /// The packet without the images it holds of the source (`xmp:Thumbnails`, and any property
    /// with an `xmpGImg` image in it); the bytes as they are when it holds none. nil when nothing
    /// is left, or when it names an image but does not parse.
    package static func removingImages(of data: Data) -> Data? {
        guard data.range(of: Data(imageNamespace.utf8)) != nil else { return data }
        return filtered(data) { node in
            !(node.namespace == namespaces["xmp"] && node.name == "Thumbnails") && !node.contains(where: { $0.namespace == imageNamespace })
        }
    }

    private static let imageNamespace = "http://ns.adobe.com/xap/1.0/g/img/"

    /// A packet of the properties of every `rdf:Description` that `keep` accepts.
    private static func filtered(_ data: Data, keep: (XMLTree.Node) -> Bool) -> Data? {
        guard let root = XMLTree.parse(data.prefix { $0 != 0 }) else { return nil }
        let kept = root.descendants { $0.namespace == rdf && $0.name == "Description" }.flatMap { description in
            description.attributes.filter { $0.namespace != rdf && !$0.namespace.isEmpty }
                .map { XMLTree.Node(namespace: $0.namespace, name: $0.name, text: $0.value) }
                + description.children
        }.filter(keep)
        guard !kept.isEmpty else { return nil }
        return Data(packet(kept).utf8)
    }

    /// A complete packet around `properties`, every namespace they use declared once.
    private static func packet(_ properties: [XMLTree.Node]) -> String {
        var writer = XMLTree.Writer(prefixes: Dictionary(uniqueKeysWithValues: namespaces.map { ($0.value, $0.key) } + [(rdf, "rdf")]))
        let body = properties.map { writer.element($0) }.joined()
        let declarations = writer.used.filter { $0 != rdf }.sorted().map { " xmlns:\(writer.prefixes[$0]!)=\"\(XMLTree.escape($0))\"" }.joined()
        return "<?xpacket begin=\"\u{FEFF}\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>"
            + "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"\(rdf)\">"
            + "<rdf:Description rdf:about=\"\"\(declarations)>\(body)</rdf:Description>"
            + "</rdf:RDF></x:xmpmeta><?xpacket end=\"w\"?>"
    }
}

/// A parsed XML document as plain values: element and attribute names resolved to their
/// namespaces, text kept in order with the elements.
enum XMLTree {
    struct Attribute {
        var namespace: String
        var name: String
        var value: String
    }

    final class Node {
        let namespace: String
        let name: String
        var attributes: [Attribute] = []
        var children: [Node] = []
        var text = ""

        init(namespace: String, name: String, attributes: [Attribute] = [], text: String = "") {
            (self.namespace, self.name, self.attributes, self.text) = (namespace, name, attributes, text)
        }

        /// Whether this node or one below it passes `test`.
        func contains(where test: (Node) -> Bool) -> Bool {
            test(self) || children.contains { $0.contains(where: test) }
        }

        func descendants(where test: (Node) -> Bool) -> [Node] {
            children.flatMap { test($0) ? [$0] : $0.descendants(where: test) }
        }
    }

    static func parse(_ data: Data) -> Node? {
        let parser = XMLParser(data: data)
        let builder = Builder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = true
        parser.shouldResolveExternalEntities = false
        return parser.parse() ? builder.root : nil
    }

    private final class Builder: NSObject, XMLParserDelegate {
        let root = Node(namespace: "", name: "")
        private var open: [Node] = []
        private var prefixes = ["xml": XMPPacket.xml]

        func parser(_ parser: XMLParser, didStartMappingPrefix prefix: String, toURI namespaceURI: String) {
            prefixes[prefix] = namespaceURI
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let resolved = attributes.sorted { $0.key < $1.key }.compactMap { key, value -> Attribute? in
                let parts = key.split(separator: ":", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { return Attribute(namespace: "", name: key, value: value) }
                guard parts[0] != "xmlns", let namespace = prefixes[parts[0]] else { return nil }
                return Attribute(namespace: namespace, name: parts[1], value: value)
            }
            let node = Node(namespace: namespaceURI ?? "", name: name, attributes: resolved)
            (open.last ?? root).children.append(node)
            open.append(node)
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            open.removeLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            open.last?.text += string
        }
    }

    /// Writes elements with a prefix per namespace (the known ones, else `ns1`, `ns2`, ...),
    /// remembering which it used so the caller declares them.
    struct Writer {
        var prefixes: [String: String]
        var used: Set<String> = []

        mutating func element(_ node: Node) -> String {
            let name = qualified(node.namespace, node.name)
            let attributes = node.attributes.map { " \(qualified($0.namespace, $0.name))=\"\(XMLTree.escape($0.value))\"" }.joined()
            let children = node.children.map { element($0) }.joined()
            let text = node.children.isEmpty ? XMLTree.escape(node.text) : ""
            return "<\(name)\(attributes)>\(text)\(children)</\(name)>"
        }

        private mutating func qualified(_ namespace: String, _ name: String) -> String {
            if namespace.isEmpty { return name }
            if namespace == XMPPacket.xml { return "xml:" + name }
            used.insert(namespace)
            if prefixes[namespace] == nil { prefixes[namespace] = "ns\(prefixes.count + 1)" }
            return "\(prefixes[namespace]!):\(name)"
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
