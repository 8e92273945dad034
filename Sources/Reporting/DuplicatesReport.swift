import Foundation
import Support
import Keys
import Imaging
import JobFile

/// `runner duplicates`: sources whose stored dHashes differ in at most `distance` bits (resized,
/// recompressed), and sources with the same bytes, over every database that answers for the job.
public struct DuplicatesReport: Encodable, Sendable {
    public struct Member: Encodable, Sendable {
        public let key: String
        /// The file path or URL.
        public let location: String
        public let bytes, width, height: Int
        public let dhash: String
        public let contentHash: String?
    }

    public struct Group: Encodable, Sendable {
        /// Members in source-key order.
        public let sources: [Member]
        /// The most bits a member's dHash differs from the first member's (0 for exact duplicates).
        public let maxDistance: Int
    }

    public let job: String
    /// False when the job has never run.
    public let hasRun: Bool
    public let distance: Int
    /// Sources with a stored dHash: those compared.
    public let sources: Int
    /// Groups of identical bytes, largest first.
    public let exact: [Group]
    /// Groups within `distance` bits (chains included: a group's ends may differ by more), largest
    /// first; a group whose members are all one exact duplicate is listed under `exact` only.
    public let near: [Group]

    package init(job: Job, distance: Int = DHash.duplicateDistance) throws {
        guard let dhash = job.derive.values.first(where: { $0 is DHash }) else {
            throw JobFileError("derive", "lists no \"\(DHash.name)\": runner duplicates compares the dHashes a run stores; "
                               + "add \"\(DHash.name)\" to derive and run the job (only the new value is computed)")
        }
        let databases = try JobDatabases(job: job)
        defer { databases.close() }
        try self.init(databases, dhash: dhash, job: job, distance: distance)
    }

    /// From databases a caller opened and closes; `dhash` is the job's.
    package init(_ databases: JobDatabases, dhash: any DerivedValue, job: Job, distance: Int = DHash.duplicateDistance) throws {
        let stores = databases.stores
        var members: [Member] = []
        var hashes: [UInt64] = []
        for store in stores {
            try store.forEachDerivedSource(names: [DHash.name]) { record in
                guard case .string(let hex)? = record.value(dhash.identifier), let hash = UInt64(hex, radix: 16) else { return }
                let source = record.source
                members.append(Member(key: source.key, location: source.location, bytes: source.bytes, width: source.width,
                                      height: source.height, dhash: hex, contentHash: source.contentHash))
                hashes.append(hash)
            }
        }
        // In key order over every store, as one database lists them: groups of a size come in the same order however sharded.
        let order = members.indices.sorted { bytewise(members[$0].key, members[$1].key) }
        (members, hashes) = (order.map { members[$0] }, order.map { hashes[$0] })
        (self.job, hasRun, self.distance, sources) = (job.name, !stores.isEmpty, distance, members.count)
        // A group's indices come in input order (`DuplicateGroups`), so its members in key order too.
        let group = { (indices: [Int]) -> Group in
            let spread = indices.map { (hashes[$0] ^ hashes[indices[0]]).nonzeroBitCount }.max() ?? 0
            return Group(sources: indices.map { members[$0] }, maxDistance: spread)
        }
        let hashed = members.indices.filter { members[$0].contentHash != nil }
        exact = DuplicateGroups.exact(hashed.map { members[$0].contentHash! }).map { group($0.map { hashed[$0] }) }
        near = DuplicateGroups.near(hashes, within: distance).filter { indices in
            let contents = Set(indices.map { members[$0].contentHash })
            return contents.count > 1 || contents.first == nil
        }.map(group)
    }

    public func text() -> String {
        var lines = ["\(job): \(Format.plural(sources, "source")) with a dHash; "
            + "\(Format.plural(exact.count, "group")) of exact duplicates, "
            + "\(near.count) of near duplicates (within \(Format.plural(distance, "bit")))"]
        for (title, groups) in [("exact", exact), ("near", near)] {
            for (number, group) in groups.enumerated() {
                lines.append("\(title) \(number + 1): \(group.sources.count) sources"
                    + (title == "near" ? ", up to \(Format.plural(group.maxDistance, "bit")) from the first" : ", the same bytes"))
                lines += group.sources.map { "  \($0.location)\t\($0.width)x\($0.height)\t\(Format.bytes($0.bytes))\t\($0.dhash)" }
            }
        }
        return lines.joined(separator: "\n")
    }
}
