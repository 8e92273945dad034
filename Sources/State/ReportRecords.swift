import Foundation
import Model

/// An item's row (`item`): what it is, where it stands, and for a done one the facts of its output
/// (`v9: output facts`); its source's are the source's row (`StoredSource`).
package struct ItemRecord: Sendable {
    package let key: String
    package let sourceKey: String
    package let outputName: String
    package var state: ItemState
    package let attempts: Int
    package let fingerprint: String
    package let outputPath: String
    /// A failed item's failure kind; nil unless failed.
    package let errorKind: ItemFailure.Kind?
    /// A failed item's message, or why a blocked one was not attempted.
    package let errorMessage: String?
    package let warning: String?
    package let updatedAt: Date
    /// When an item that is failed now first failed (kept while it fails again).
    package let failedSince: Date?
    package let width: Int?, height: Int?, bytes: Int?
    package let mediaType: String?, contentHash: String?
    /// How a done output with a quality target got its quality.
    package var quality: QualityOutcome? = nil

    /// Why a failed item failed; nil for any other.
    package var failure: ItemFailure? {
        state == .failed ? errorKind.map { ItemFailure($0, errorMessage ?? "") } : nil
    }
}

/// One recorded item as a site manifest lists it (`SiteManifestWriter` in Reporting): its row, and
/// the URL a URL source was downloaded from (the originals cache), when it has been.
@dynamicMemberLookup
package struct SiteManifestItem: Sendable {
    package var item: ItemRecord
    package let url: String?

    package subscript<Value>(dynamicMember field: KeyPath<ItemRecord, Value>) -> Value { item[keyPath: field] }
}

/// Failed items of one kind.
public struct FailureKindRecord: Sendable, Codable {
    public let kind: ItemFailure.Kind
    public let count: Int
    /// When the oldest of them was recorded.
    public let since: Date
}

extension RunRecord {
    /// How long the run took; nil while it runs (or when it was killed before it could say).
    public var duration: TimeInterval? { endedAt.map { $0.timeIntervalSince(startedAt) } }

    /// nil while the run has no end recorded.
    public var itemsPerSecond: Double? {
        duration.map { RunSummary.itemsPerSecond(done: done, failed: failed, seconds: $0) }
    }
}
