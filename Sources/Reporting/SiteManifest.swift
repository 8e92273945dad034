import Foundation
import Support
import Model
import JobFile
import State
import ObjectStore

/// The site manifest (docs/JOB-FILE.md, Site manifest): every source with its outputs, for a site's
/// `srcset` and `<picture>`, from the state databases alone. Sources by key, outputs by name (bytewise)
/// and keys sorted, so the same state gives the same bytes; shards merged a page at a time.
package struct SiteManifestWriter {
    /// `manifestVersion`: the shape `SiteManifestSchema` describes.
    package static let version = 1

    package let jobName: String
    /// The databases to list, each ordered; a source is in one of them (its shard's).
    package let stores: [StateStore]
    /// The folder output paths are written relative to: the manifest file's own.
    package let base: ManifestBase
    package let format: SiteManifestFormat
    /// The part a shard's run writes; nil for the whole job.
    package let shard: Shard?
    /// As the job's `manifest` key names sources, wherever this manifest goes.
    package let naming: SourceNaming
    /// The job's blocks of widths and formats, which each source's `sets` groups.
    package let sets: SiteManifestSets

    package init(job: Job, stores: [StateStore], base: String, format: SiteManifestFormat, shard: Shard? = nil) {
        (jobName, self.stores, self.base, self.format, self.shard) = (job.name, stores, ManifestBase(folder: base, job: job), format, shard)
        (naming, sets) = (job.manifest?.naming ?? .path, SiteManifestSets(job.outputs))
    }

    /// Writes `stores`' manifest where the job's `manifest` key says, for `shard` (its part) or the whole job.
    package static func writeJobManifest(_ job: Job, stores: [StateStore], shard: Shard?) throws {
        guard let settings = job.manifest else { return }
        let path = settings.path(for: shard)
        try SiteManifestWriter(job: job, stores: stores, base: Paths.directory(of: path), format: settings.format, shard: shard).write(to: path, of: job)
    }

    /// Writes the manifest where its destination stages it (its own path for a file, a copy in the
    /// job's upload folder for an object, left alone when unchanged), then has the destination
    /// publish it. Written last, after the outputs it names.
    @discardableResult
    package func write(to path: String, of job: Job) throws -> Bool {
        guard let place = job.destination(of: path) else {
            throw RunFileUnwritable(file: "the manifest", path: path, reason: "no output of the job writes to its bucket")
        }
        let written = try write(to: place.stagingPath(for: path, uploads: job.uploadFolder))
        return try place.publishDocument(at: path, uploads: job.uploadFolder, mediaType: format == .json ? "application/json" : "application/x-ndjson")
            || written
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
            throw RunFileUnwritable(file: "the manifest", path: path, reason: error.message)
        }
    }

    /// The manifest's text, piece by piece.
    package func write(_ emit: (String) throws -> Void) throws {
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
    }

    /// Each source's items (by output name) and its `source` rows (one per store that has one, in
    /// store order), in source key order over every store.
    private func forEachSource(_ visit: ([SiteManifestItem], [DerivedSourceRecord]) throws -> Void) throws {
        var merge = try OrderedMerge(stores.map(Self.items)) { bytewise($0.item.sourceKey, $1.item.sourceKey) }
        var next = try merge.next()
        while let key = next?.element.item.sourceKey {
            var items: [SiteManifestItem] = []
            var records: [DerivedSourceRecord] = []
            var seen: Set<Int> = []
            // Normally one store holds the source; another database of the layout could too: the first one's outputs count.
            while let (head, store) = next, head.item.sourceKey.utf8.elementsEqual(key.utf8) {
                if seen.insert(store).inserted, let record = head.record { records.append(record) }
                if !items.contains(where: { $0.outputName == head.item.outputName }) { items.append(head.item) }
                next = try merge.next()
            }
            try visit(items.sorted { bytewise($0.outputName, $1.outputName) }, records)
        }
    }

    /// One store's items in manifest order, a page at a time, each with its source's `source` row
    /// (facts and derived values) read with the page.
    private static func items(of store: StateStore) -> () throws -> (item: SiteManifestItem, record: DerivedSourceRecord?)? {
        var page: [SiteManifestItem] = [], index = 0, records: [String: DerivedSourceRecord] = [:], done = false
        return {
            if index == page.count, !done {
                page = try store.siteManifestPage(after: page.last.map { ($0.sourceKey, $0.outputName) })
                (index, done) = (0, page.isEmpty)
                records = try store.sourceRecords(of: Array(Set(page.map(\.sourceKey))))
            }
            guard index < page.count else { return nil }
            index += 1
            return (page[index - 1], records[page[index - 1].sourceKey])
        }
    }

    /// A source's object: key, path or URL, the original's facts (its `source` row, once an output
    /// of it is done), outputs, their `sets`, derived values (each name from the first store that has it).
    /// Named by `id`, a source has no key, path or URL, and its outputs no reason or warning.
    static func source(_ items: [SiteManifestItem], _ records: [DerivedSourceRecord], base: ManifestBase, naming: SourceNaming,
                       sets: SiteManifestSets) -> JSONValue {
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
    static func output(_ item: SiteManifestItem, base: ManifestBase, quoting: Bool) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(item.outputName), "state": .string(item.state.rawValue)]
        if base.namesFile(item) { object["path"] = .string(base.reference(to: item.outputPath)) }
        switch item.state {
        case .done:
            object["width"] = item.width.map { .number(Double($0)) }
            object["height"] = item.height.map { .number(Double($0)) }
            object["bytes"] = item.bytes.map { .number(Double($0)) }
            object["type"] = item.mediaType.map(JSONValue.string)
            object["hash"] = item.contentHash.map { .string(String($0.prefix(shortHashDigits))) }
            object["warning"] = quoting ? item.warning.map(JSONValue.string) : nil
            object["quality"] = item.quality.map { .number(Double($0.quality)) }
            object["score"] = item.quality?.score.map { .number(($0 * 100).rounded() / 100) }
        case .failed:
            object["kind"] = item.errorKind.map { .string($0.rawValue) }
            object["reason"] = quoting ? .string(item.errorMessage ?? "") : nil
        case .blocked:
            object["reason"] = quoting ? .string(item.errorMessage ?? "") : nil
        case .skipped:
            // Names an output and a width, never the source.
            object["reason"] = .string(item.errorMessage ?? "")
        case .pending, .running:
            break
        }
        return .object(object)
    }

    /// Hex digits of an output's `hash`: the first 32 bits of its FNV-1a 64, enough to bust a cache.
    package static let shortHashDigits = 8
}

/// The folder a manifest names outputs from, and how: each output as its destination names it there.
package struct ManifestBase: Sendable {
    package let folder: String
    let job: Job
    /// The outputs named by `{hash}`, found once rather than per item.
    private let hashNamed: Set<String>

    init(folder: String, job: Job) {
        (self.folder, self.job) = (folder, job)
        hashNamed = Set(job.outputs.filter { $0.template.hashSuffix != nil }.map(\.name))
    }

    /// Whether the item has a file to name: a skipped output has none, and a `{hash}` output never
    /// made only its planned path, the token unresolved (no manifest entry holds a literal token).
    func namesFile(_ item: SiteManifestItem) -> Bool {
        item.state != .skipped && !(hashNamed.contains(item.outputName) && Paths.lastComponent(item.outputPath).contains("{hash}"))
    }

    func reference(to path: String) -> String {
        (job.destination(of: path) ?? FolderDestination.shared).reference(to: path, from: folder)
    }
}
