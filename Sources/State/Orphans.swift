import Foundation
import Support
import JobFile
import Planning
import ObjectStore

/// A recorded item the job no longer plans at its recorded path: its source is gone, its output
/// left the job, or its output path changed.
public struct Orphan: Sendable {
    /// Why pruning leaves an orphan's file alone.
    public enum KeptBecause: Sendable, CustomStringConvertible {
        /// An item of the job writes this path now.
        case writtenByJob
        /// Not recorded done: runner may never have written the file.
        case notDone
        /// What its destination found there instead of what runner wrote, or why it could not remove it.
        case removal(Removal)
        /// An object in a bucket no output of the job writes to now: which store holds it is not known.
        case unknownStore

        public var description: String {
            switch self {
            case .writtenByJob: "the job writes this path now"
            case .notDone: "not recorded done"
            case .removal(let removal): removal.description
            case .unknownStore: "no output of the job writes to its bucket now, so its store is not known"
            }
        }

        /// The file could not be checked or deleted: its row stays, for a later prune.
        package var isFailure: Bool {
            switch self {
            case .removal(.failed), .removal(.refused): true
            default: false
            }
        }
    }

    public let key: String
    public let outputPath: String
    /// nil when pruning deletes (or has deleted) the file.
    public let keptBecause: KeptBecause?
}

/// The items a job plans now, as 64-bit digests of (key, output path), output paths and source keys
/// (16 MB each per million): a chance match only ever keeps a row or a file, so 64 bits do here.
package struct CurrentItems {
    /// `{hash}` outputs by name: their items are planned at a path with `{hash}` in it.
    private let hashed: [String: PathTemplate]
    /// Where each recorded path is kept, and what removes it.
    private let job: Job

    package init(job: Job) {
        hashed = Dictionary(job.outputs.compactMap { $0.template.hashSuffix == nil ? nil : ($0.name, $0.template) }, uniquingKeysWith: { first, _ in first })
        self.job = job
    }

    /// The path `recorded` was planned at: a `{hash}` output's with `{hash}` in place of its digits.
    private func plannedPath(_ recorded: ItemRecord) -> String {
        hashed[recorded.outputName]?.planned(from: recorded.outputPath) ?? recorded.outputPath
    }

    private var items = Set<UInt64>()
    private var paths = Set<UInt64>()
    private var sources = Set<UInt64>()

    package mutating func insert(_ source: PlannedSource) {
        sources.insert(StableHash.value(source.key))
        for item in source.items {
            items.insert(StableHash.value(item.key + "\0" + item.outputPath))
            paths.insert(StableHash.value(item.outputPath))
        }
    }

    package func plans(_ recorded: ItemRecord) -> Bool {
        items.contains(StableHash.value(recorded.key + "\0" + plannedPath(recorded)))
    }

    /// Whether the job plans the source `key` (a recorded `source` row and its derived values).
    package func plansSource(_ key: String) -> Bool {
        sources.contains(StableHash.value(key))
    }

    /// `recorded` as an orphan, its file deleted first when `delete` is set and runner wrote it:
    /// recorded done at that path, no current item's output, and removed by its destination (a
    /// regular file; an object, through the store the job's outputs write its bucket with now).
    /// Throws when the store refuses the run or cannot be reached.
    package func orphan(_ recorded: ItemRecord, delete: Bool) throws(ObjectStoreError) -> Orphan {
        let kept: Orphan.KeptBecause? = if paths.contains(StableHash.value(plannedPath(recorded))) {
            .writtenByJob
        } else if recorded.state != .done {
            .notDone
        } else if let place = job.destination(of: recorded.outputPath) {
            try Self.kept(place.remove(recorded.outputPath, really: delete))
        } else {
            .unknownStore
        }
        return Orphan(key: recorded.key, outputPath: recorded.outputPath, keptBecause: kept)
    }

    private static func kept(_ removal: Removal) -> Orphan.KeptBecause? {
        removal == .removed ? nil : .removal(removal)
    }
}
