import Foundation
import Support
import Model
import JobFile

/// How many items a plan has in each status. Codable by these names, as `runner plan --json` and a
/// run's `plan` event both write them: one spelling, so a count means the same in both.
public struct PlanCounts: Sendable, Codable {
    /// Items that run whatever servers answer.
    public var toRun = 0
    /// Items a run only revalidates (`PlannedItem.Status.revalidate`).
    public var revalidate = 0
    public var upToDate = 0
    public var blocked = 0
    public var knownFailures = 0
    /// Items to run or revalidate that another source's item of their output would write over.
    public var collisions = 0
    /// Derived values (`derive`) to compute, one per value per source.
    public var toDerive = 0
    /// The sources are the shard's last plan's, its lists and walked folders unchanged (`SourceMemory`).
    public var reusedSources = false

    public init() {}

    /// Items a run takes up: those to run and those to revalidate.
    public var pending: Int { toRun + revalidate }

    /// The counts as `runner plan` and a run's first line say them: `12 to run, 20 to revalidate, …`.
    public var described: String {
        var line = "\(toRun) to run, \(revalidate) to revalidate, \(upToDate) up to date, \(blocked) blocked"
        if knownFailures > 0 { line += ", \(Format.plural(knownFailures, "known failure")) (not retried without --retry-failed)" }
        if collisions > 0 { line += ", \(collisions) colliding (another source would write the same output; they fail)" }
        if toDerive > 0 { line += ", \(Format.plural(toDerive, "derived value")) to compute" }
        if reusedSources { line += "; sources as the last plan found them (lists and folders unchanged)" }
        return line
    }

    public subscript(status: PlannedItem.Status) -> Int { self[keyPath: Self.count(of: status)] }

    /// Where items in `status` are counted.
    private static func count(of status: PlannedItem.Status) -> WritableKeyPath<PlanCounts, Int> {
        switch status {
        case .pending: \.toRun
        case .revalidate: \.revalidate
        case .upToDate: \.upToDate
        case .blocked: \.blocked
        case .knownFailure: \.knownFailures
        }
    }

    package mutating func add(_ source: PlannedSource) {
        toDerive += source.derivation?.values.count ?? 0
        for item in source.items { self[keyPath: Self.count(of: item.status)] += 1 }
    }
}

/// One source and its items (one per output). Codable: runs spool their sources (`PlanSpool`).
public struct PlannedSource: Sendable, Codable {
    /// The source key: a file's absolute path, a URL's normalized form, or an explicit key.
    public let key: String
    package let origin: SourceOrigin
    /// What the fingerprint knows of the source's content, or why a file could not be read.
    package var identity: SourceIdentity
    /// A fetched source's original in the cache, as the state database records it.
    package var cachedOriginal: CachedOriginal?
    /// The cached original's content, as the source's kind identifies it.
    package var cachedIdentity: SourceIdentity? { cachedOriginal.flatMap { kind.fetched?.identity(of: $0) } }
    /// Why a blocked source's URL is blacklisted.
    package var blockedReason: String?
    /// Blacklisted, but written again since (`FetchedSource.changedAt`): a successful fetch unblocks it.
    package var retriesBlacklisted = false
    /// What the state database holds of the source's derived values, and which of them to compute.
    package var derivedLedger = DerivedLedger()
    package var derivation: PlannedDerivation?
    public var items: [PlannedItem]

    package var kind: any SourceKind { origin.kind }
    /// The file path or URL, for people.
    public var location: String { origin.kind.location }
}

/// A source's derived values as the state database holds them: each identifier's fingerprint.
package struct DerivedLedger: Sendable, Codable, Equatable {
    package var values: [String: String] = [:]
    /// The source's content hash on record, and the fingerprint of the content it was taken of.
    package var contentHash: String?
    package var contentHashFingerprint: String?

    package init(values: [String: String] = [:], contentHash: String? = nil, contentHashFingerprint: String? = nil) {
        (self.values, self.contentHash, self.contentHashFingerprint) = (values, contentHash, contentHashFingerprint)
    }
}

package enum SourceIdentity: Sendable, Equatable, Codable {
    /// A local file: size and modification time.
    case file(size: Int64, modifiedNanoseconds: Int64)
    /// A downloaded original: a hash of its bytes.
    case content(String)
    /// An object as its store's listing identifies it: its ETag.
    case etag(String)
    /// A remote source not downloaded yet: nothing can be up to date.
    case unknown
    /// A local file that cannot be read, and why.
    case missing(String)
    /// A local path that names no regular file (a FIFO, a device, a socket), by its type, and why it is not read.
    case notRegular(type: String, message: String)

    /// Whether a failure of `kind` stands until this identity changes: one its content decided, or
    /// for a path naming no regular file, that it cannot be read.
    package func decides(_ kind: ItemFailure.Kind) -> Bool {
        if case .notRegular = self, kind == .unreadable { return true }
        return kind.isDecidedByContent
    }
}

/// (source, output): the unit of progress.
public struct PlannedItem: Sendable, Codable {
    public enum Status: String, Sendable, CaseIterable, Codable {
        /// Needs to run: new, changed, failed before, missing its output, or a URL not downloaded yet.
        case pending
        /// Recorded done with the same fingerprint, and the output file exists.
        case upToDate = "up-to-date"
        /// Will not run: its URL is blacklisted.
        case blocked
        /// Will not run: it failed on this same content and recipe before, for a reason the source decides (see `SourceIdentity.decides`).
        case knownFailure = "known-failure"
        /// A URL item done from its cached original, which a run revalidates first: it runs only if the content changed.
        case revalidate
    }

    /// `sourceKey@outputName`.
    public let key: String
    public let outputName: String
    package let outputIndex: Int
    public let outputPath: String
    public package(set) var fingerprint: String
    public internal(set) var status: Status
    /// What the state database recorded: done at this output path, or failed in a way its content decided.
    package var recorded: LedgerEntry?
    /// What an earlier run found for this item's quality target (`Classifier.classify`).
    package var qualityHint: QualityHint?

    /// Where the item's file is: where it was recorded done (a `{hash}` name with its digits), else `outputPath`.
    package var currentPath: String {
        recorded.flatMap { $0.failureKind == nil ? $0.outputPath : nil } ?? outputPath
    }

    /// Recorded done with this fingerprint, and the output still there as its destination tells.
    package func isUpToDate(in place: any Destination, statting stats: FolderStat) -> Bool {
        guard let recorded, recorded.failureKind == nil, recorded.fingerprint == fingerprint else { return false }
        return recorded.skipped || place.holds(recorded.outputPath, statting: stats)
    }

    /// A quality search is paid once: the same item (fingerprint) encodes at its recorded answer,
    /// even forced; changed content starts its search from it.
    package mutating func rememberQuality(_ entry: LedgerEntry) {
        guard let earlier = entry.quality, earlier.score != nil || earlier.unscorable != nil else { return }
        qualityHint = entry.fingerprint == fingerprint ? .remembered(earlier) : .seed(earlier.quality)
    }

    /// Failed before on the same source content and recipe, for a reason the content decides.
    package var isKnownFailure: Bool { recorded?.failureKind != nil && recorded?.fingerprint == fingerprint }
}
