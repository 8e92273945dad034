import Foundation
import Model

/// The rows `StateStore` reads for reports, beside `RunRecord` and friends.

/// Failed items of one kind.
public struct FailureKindRecord: Sendable, Codable {
    public let kind: String
    public let count: Int
    /// When the oldest of them was recorded.
    public let since: Date
}

/// One tile of a contact sheet: a done item's output, or a failed item's failure.
package struct SheetItemRecord: Sendable {
    package let key: String
    package let source: String
    package let output: String
    package let outputPath: String
    /// nil for a done item.
    package let failureKind: String?
    package let failureMessage: String
    package let at: Date
}

extension RunRecord {
    /// How long the run took; nil while it runs (or when it was killed before it could say).
    public var duration: TimeInterval? { endedAt.map { $0.timeIntervalSince(startedAt) } }

    /// nil while the run has no end recorded.
    public var itemsPerSecond: Double? {
        duration.map { RunSummary.itemsPerSecond(done: done, failed: failed, seconds: $0) }
    }
}
