import Foundation
import Support
import Model
import JobFile
import State
import Output

/// The site manifest (docs/JOB-FILE.md, Site manifest): every source of the job with its outputs, for a
/// site build's `srcset` and `<picture>`; read from state databases alone, in a stable order
/// (source key, then output name, byte for byte) with sorted keys, so the same state gives the
/// same bytes. A sharded job's databases are merged a page at a time, so memory stays flat.
/// Not the job file (`JobFile`, the first stage).
package struct SiteManifestWriter {
    /// `manifestVersion`: the shape `SiteManifestSchema` describes.
    package static let version = 1

    package let jobName: String
    /// The databases to list, each ordered; a source is in one of them (its shard's).
    package let stores: [StateStore]
    /// The folder output paths are written relative to: the manifest file's own.
    package let base: String
    package let format: SiteManifestFormat
    /// The part a shard's run writes; nil for the whole job.
    package let shard: Shard?
    package let naming: SourceNaming
    /// The job's blocks of widths and formats, which each source's `sets` groups.
    package let sets: SiteManifestSets

    package init(jobName: String, stores: [StateStore], base: String, format: SiteManifestFormat, shard: Shard? = nil,
                 naming: SourceNaming = .path, sets: SiteManifestSets = .none) {
        (self.jobName, self.stores, self.base, self.format, self.shard) = (jobName, stores, base, format, shard)
        (self.naming, self.sets) = (naming, sets)
    }

    /// The manifest could not be written: a run's work stands, its exit code says so (73).
    package struct Unwritable: ExitCoded, CustomStringConvertible {
        package let path: String
        package let reason: String
        package var exitCode: Int32 { ExitStatus.runFileUnwritable }
        package var description: String { "cannot write the manifest \(path): \(reason)" }
    }

    /// Writes the manifest to `path` atomically, unless the file there has the same bytes
    /// already (then it is left alone: same inode, same modification time). Whether it was written.
    @discardableResult
    package func write(to path: String) throws -> Bool {
        do {
            let file = AtomicFile.Streamed(path: path)
            do { try write { try file.write($0) } } catch {
                file.discard()
                throw error
            }
            return try file.commit()
        } catch let error as ItemFailure {
            throw Unwritable(path: path, reason: error.message)
        }
    }

    /// The manifest's text, piece by piece; the number of sources.
    @discardableResult
    package func write(_ emit: (String) throws -> Void) throws -> Int {
        var header: [String: JSONValue] = ["job": .string(jobName), "manifestVersion": .number(Double(Self.version))]
        if let shard { header["shard"] = .string(shard.description) }
        if format == .json {
            let fields = header.sorted { $0.key < $1.key }.map { "  \(JSONValue.string($0.key).compact): \($0.value.compact),\n" }
            try emit("{\n" + fields.joined() + "  \"sources\": [")
        }
        var count = 0
        try forEachSource { items, records in
            let line = Self.source(items, records, base: base, naming: naming, sets: sets).compact
            switch format {
            case .json: try emit((count == 0 ? "\n    " : ",\n    ") + line)
            case .jsonl: try emit(line + "\n")
            }
            count += 1
        }
        if format == .json { try emit(count == 0 ? "]\n}\n" : "\n  ]\n}\n") }
        return count
    }

    /// Each source's items (by output name) and its `source` rows (one per store that has one), in
    /// source key order over every store.
    private func forEachSource(_ visit: ([SiteManifestItem], [DerivedSourceRecord]) throws -> Void) throws {
        var heads = try stores.map { try ItemCursor($0) }.filter { $0.current != nil }
        // A heap on each store's next source key: one comparison per level for every source.
        var heap = SourceHeap(heads.indices.map { $0 }) { heads[$0].current!.sourceKey.utf8.lexicographicallyPrecedes(heads[$1].current!.sourceKey.utf8) }
        while let top = heap.first {
            let key = heads[top].current!.sourceKey
            var items: [SiteManifestItem] = []
            var records: [DerivedSourceRecord] = []
            // Normally one store holds the source; another database of the layout could too.
            while let index = heap.first, heads[index].current!.sourceKey.utf8.elementsEqual(key.utf8) {
                if let record = heads[index].recordOfCurrentSource() { records.append(record) }
                while let item = heads[index].current, item.sourceKey.utf8.elementsEqual(key.utf8) {
                    if !items.contains(where: { $0.outputName == item.outputName }) { items.append(item) }
                    try heads[index].advance()
                }
                if heads[index].current == nil { heap.removeFirst() } else { heap.siftDownFirst() }
            }
            try visit(items.sorted { $0.outputName.utf8.lexicographicallyPrecedes($1.outputName.utf8) }, records)
        }
    }

    /// A source's object: key, path or URL, the original's facts (its `source` row, once an output
    /// of it is done), outputs, their `sets`, derived values (each name from the first store that has it).
    /// Named by `id`, a source has no key, path or URL, and its outputs no reason or warning.
    static func source(_ items: [SiteManifestItem], _ records: [DerivedSourceRecord], base: String, naming: SourceNaming = .path,
                       sets: SiteManifestSets = .none) -> JSONValue {
        let key = items[0].sourceKey
        var object: [String: JSONValue] = ["outputs": .array(items.map { output($0, base: base, quoting: naming == .path) })]
        object["sets"] = sets.sets(of: items, base: base)
        if naming == .id {
            object["id"] = .string(PathTemplate.Values.key(of: key))
        } else if key.utf8.first == UInt8(ascii: "/") {
            object["key"] = .string(key)
            object["path"] = .string(key)
        } else {
            object["key"] = .string(key)
            if let url = items.lazy.compactMap(\.url).first ?? (key.contains("://") ? key : nil) { object["url"] = .string(url) }
        }
        if let facts = records.first?.source, items.contains(where: { $0.state == .done }) {
            object["width"] = .number(Double(facts.width))
            object["height"] = .number(Double(facts.height))
            object["format"] = .string(facts.format)
            object["contentHash"] = facts.contentHash.map(JSONValue.string)
        }
        var derived: [String: JSONValue] = [:]
        for record in records {
            for stored in record.values.values { if derived[stored.name] == nil, let value = stored.value { derived[stored.name] = value } }
        }
        if !derived.isEmpty { object["derived"] = .object(derived) }
        return .object(object)
    }

    /// An output's object: name, state, path; a done one's facts, a failed or blocked one's reason
    /// (with `quoting`: the messages may name the source's path or URL).
    static func output(_ item: SiteManifestItem, base: String, quoting: Bool) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(item.outputName), "state": .string(item.state.rawValue),
                                           "path": .string(Paths.relative(item.outputPath, from: base))]
        switch item.state {
        case .done:
            object["width"] = item.width.map { .number(Double($0)) }
            object["height"] = item.height.map { .number(Double($0)) }
            object["bytes"] = item.bytes.map { .number(Double($0)) }
            object["type"] = item.mediaType.map(JSONValue.string)
            object["hash"] = item.contentHash.map { .string(String($0.prefix(shortHashDigits))) }
            object["warning"] = quoting ? item.warning.map(JSONValue.string) : nil
        case .failed:
            object["kind"] = item.errorKind.map { .string($0.rawValue) }
            object["reason"] = quoting ? .string(item.errorMessage ?? "") : nil
        case .blocked:
            object["reason"] = quoting ? .string(item.errorMessage ?? "") : nil
        case .pending, .running:
            break
        }
        return .object(object)
    }

    /// Hex digits of an output's `hash`: the first 32 bits of its FNV-1a 64, enough to bust a cache.
    package static let shortHashDigits = 8

}

/// One store's items in manifest order, a page at a time, with the `source` rows (facts and derived
/// values) of each page's sources: the one place the manifest reads them.
private struct ItemCursor {
    let store: StateStore
    private var page: [SiteManifestItem] = []
    private var index = 0
    private var records: [String: DerivedSourceRecord] = [:]

    init(_ store: StateStore) throws {
        self.store = store
        try load(after: nil)
    }

    var current: SiteManifestItem? { index < page.count ? page[index] : nil }

    func recordOfCurrentSource() -> DerivedSourceRecord? { current.flatMap { records[$0.sourceKey] } }

    mutating func advance() throws {
        index += 1
        if index == page.count, let last = page.last { try load(after: (last.sourceKey, last.outputName)) }
    }

    private mutating func load(after: (source: String, output: String)?) throws {
        page = try store.siteManifestPage(after: after)
        index = 0
        records = try store.sourceRecords(of: Array(Set(page.map(\.sourceKey))))
    }
}

/// A binary min-heap of cursor indices under an ordering that reads the cursors' current items.
private struct SourceHeap {
    private var elements: [Int]
    private let precedes: (Int, Int) -> Bool

    init(_ elements: [Int], precedes: @escaping (Int, Int) -> Bool) {
        (self.elements, self.precedes) = ([], precedes)
        for element in elements { insert(element) }
    }

    var first: Int? { elements.first }

    private mutating func insert(_ element: Int) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0, precedes(elements[child], elements[(child - 1) / 2]) {
            elements.swapAt(child, (child - 1) / 2)
            child = (child - 1) / 2
        }
    }

    mutating func removeFirst() {
        elements.swapAt(0, elements.count - 1)
        elements.removeLast()
        siftDownFirst()
    }

    /// Restores the order after the first cursor moved on.
    mutating func siftDownFirst() {
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < elements.count, precedes(elements[left], elements[smallest]) { smallest = left }
            if right < elements.count, precedes(elements[right], elements[smallest]) { smallest = right }
            guard smallest != parent else { return }
            elements.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
