import Support
import JobFile
import State

/// The site manifest's `sets` (docs/JOB-FILE.md, Width and format blocks): a source's done outputs of
/// each block, one entry per format in the block's order with its images by width, so a `<picture>` is
/// one loop. An output the job no longer has is left out (it stays in `outputs` until pruned).
package struct SiteManifestSets: Sendable {
    private let members: [String: OutputSetMember]

    package init(_ outputs: [OutputSpec]) {
        members = Dictionary(outputs.compactMap { output in output.set.map { (output.name, $0) } }, uniquingKeysWith: { first, _ in first })
    }

    /// A source's `sets`, or nil when none of its block outputs is done.
    func sets(of items: [SiteManifestItem], base: ManifestBase) -> JSONValue? {
        // Block name -> format index -> the format's done items.
        var grouped: [String: [Int: (format: String, items: [SiteManifestItem])]] = [:]
        for item in items where item.state == .done && item.width != nil && item.height != nil && item.bytes != nil {
            guard let member = members[item.outputName] else { continue }
            grouped[member.block, default: [:]][member.formatIndex, default: (member.format, [])].items.append(item)
        }
        guard !grouped.isEmpty else { return nil }
        return .object(grouped.mapValues { formats in
            .array(formats.sorted { $0.key < $1.key }.map { _, entry in Self.format(entry.format, entry.items, base: base) })
        })
    }

    /// One format of a block: `{format, type, images}`, the images by width (then height, then path).
    private static func format(_ format: String, _ items: [SiteManifestItem], base: ManifestBase) -> JSONValue {
        let ordered = items.sorted { first, second in
            if first.width != second.width { return first.width! < second.width! }
            if first.height != second.height { return first.height! < second.height! }
            return first.outputPath.utf8.lexicographicallyPrecedes(second.outputPath.utf8)
        }
        let images: [JSONValue] = ordered.map { item in
            var image: [String: JSONValue] = ["path": .string(base.reference(to: item.outputPath)),
                                              "width": .number(Double(item.width!)), "height": .number(Double(item.height!)),
                                              "bytes": .number(Double(item.bytes!))]
            image["hash"] = item.contentHash.map { .string(String($0.prefix(SiteManifestWriter.shortHashDigits))) }
            return .object(image)
        }
        var object: [String: JSONValue] = ["format": .string(format), "images": .array(images)]
        object["type"] = ordered.lazy.compactMap(\.mediaType).first.map(JSONValue.string)
        return .object(object)
    }
}
