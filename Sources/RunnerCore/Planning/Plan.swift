import Foundation

/// What a run would do, computed without decoding anything.
public struct Plan: Sendable {
    public var sources: [PlannedSource]

    public var items: [PlannedItem] { sources.flatMap(\.items) }

    public func count(_ status: PlannedItem.Status) -> Int {
        sources.reduce(0) { $0 + $1.items.count { $0.status == status } }
    }

    /// Sources with at least one item to run, each carrying only those items.
    var work: [PlannedSource] {
        sources.compactMap { source in
            var pending = source
            pending.items = source.items.filter { $0.status == .pending }
            return pending.items.isEmpty ? nil : pending
        }
    }
}

/// One source and the items (one per output) planned for it.
public struct PlannedSource: Sendable {
    /// The source key: a file's absolute path, a URL's normalized form, or an explicit key.
    public let key: String
    let origin: SourceOrigin
    /// What the fingerprint knows of the source's content, or why a file could not be read.
    var identity: Result<SourceIdentity, SourceMissing>
    public var items: [PlannedItem]

    /// The file path or URL, for people.
    public var location: String {
        switch origin {
        case .file(let path): path
        case .remote(let remote): remote.url
        }
    }
}

enum SourceIdentity: Sendable, Equatable {
    /// A local file: size and modification time.
    case file(size: Int64, modifiedNanoseconds: Int64)
    /// A downloaded original: a hash of its bytes.
    case content(String)
    /// A remote source not downloaded yet: nothing can be up to date.
    case unknown
}

struct SourceMissing: Error, Sendable, Equatable {
    let message: String
}

/// (source, output): the unit of progress.
public struct PlannedItem: Sendable {
    public enum Status: String, Sendable, CaseIterable {
        /// Needs to run (or, for a URL, to be revalidated): new, changed, failed before, or missing its output.
        case pending
        /// Recorded done with the same fingerprint, and the output file exists.
        case upToDate = "up-to-date"
        /// Will not run: its URL is blacklisted.
        case blocked
    }

    /// `sourceKey@outputName`.
    public let key: String
    public let outputName: String
    let outputIndex: Int
    public let outputPath: String
    public internal(set) var fingerprint: String
    public internal(set) var status: Status
}
