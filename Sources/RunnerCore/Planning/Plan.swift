import Foundation

/// What a run would do, computed without decoding anything.
public struct Plan: Sendable {
    public let sources: [PlannedSource]

    public var items: [PlannedItem] { sources.flatMap(\.items) }

    public func count(_ status: PlannedItem.Status) -> Int {
        sources.reduce(0) { $0 + $1.items.count { $0.status == status } }
    }

    /// Sources with at least one item to run, each carrying only those items.
    var work: [PlannedSource] {
        sources.compactMap { source in
            let pending = source.items.filter { $0.status == .pending }
            return pending.isEmpty ? nil : PlannedSource(key: source.key, path: source.path,
                                                         identity: source.identity, items: pending)
        }
    }
}

/// One source file and the items (one per output) planned for it.
public struct PlannedSource: Sendable {
    /// The source key: the file's absolute, normalized path.
    public let key: String
    public let path: String
    /// size and modification time, or why the file could not be read.
    let identity: Result<SourceIdentity, SourceMissing>
    public var items: [PlannedItem]
}

struct SourceIdentity: Sendable, Equatable {
    let size: Int64
    let modifiedNanoseconds: Int64
}

struct SourceMissing: Error, Sendable, Equatable {
    let message: String
}

/// (source, output): the unit of progress.
public struct PlannedItem: Sendable {
    public enum Status: String, Sendable, CaseIterable {
        /// Needs to run: new, changed, failed before, or its output is missing.
        case pending
        /// Recorded done with the same fingerprint, and the output file exists.
        case upToDate = "up-to-date"
        /// Will not run (for example a blacklisted source).
        case blocked
    }

    /// `sourceKey@outputName`.
    public let key: String
    public let outputName: String
    let outputIndex: Int
    public let outputPath: String
    public let fingerprint: String
    public var status: Status
}
