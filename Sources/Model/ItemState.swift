/// Where an item stands, as the `item.state` column stores it and every report, JSON event and
/// metric names it. One place, so a state cannot be spelled two ways.
public enum ItemState: String, Sendable, Codable, CodingKeyRepresentable, CaseIterable {
    // In the order reports list them.
    /// Its output is on disk under its final name.
    case done
    /// Not made: its bytes would be a narrower output's of its block (the source is no wider), which
    /// the item's message names (docs/JOB-FILE.md, Width and format blocks).
    case skipped
    case failed
    /// Not attempted: its URL is on the failed-URL blacklist.
    case blocked
    /// A worker holds it now.
    case running
    /// Planned, not yet started (or started by a run that was killed).
    case pending
}

/// An item's key, `SOURCE@OUTPUT`: the source key (which may hold `@` itself) and the output's
/// name (which may not: letters, digits, `-`, `_`, `.`), so the last `@` splits it.
package enum ItemKey {
    package static func of(source: String, output: String) -> String { "\(source)@\(output)" }

    package static func split(_ key: String) -> (source: String, output: String) {
        guard let at = key.utf8.lastIndex(of: UInt8(ascii: "@")) else { return (key, "") }
        return (String(key[..<at]), String(key[key.utf8.index(after: at)...]))
    }
}

/// How one item ended: made where it ended (the worker, the download stage, the supervisor when a
/// worker died), carried unchanged over the worker's pipe and through the recorder into the state
/// database, the reporter and the run's counts.
public enum ItemOutcome: Sendable, Codable, Equatable {
    /// Rendered and staged under a temporary name; the recorder publishes it before recording it
    /// done, and records a `write` failure instead if publishing fails.
    case done(RenderedOutput, seconds: Double)
    case failed(ItemFailure, seconds: Double)
    /// Not attempted: its URL is blacklisted (the reason says since when and why).
    case blocked(reason: String)
    /// Not made: the output named `sameAs`, of the same block and format, holds its bytes (the
    /// source is no wider than that output's width).
    case skipped(sameAs: String, sourceWidth: Int)

    public var state: ItemState {
        switch self {
        case .done: .done
        case .failed: .failed
        case .blocked: .blocked
        case .skipped: .skipped
        }
    }

    public var failure: ItemFailure? { if case .failed(let failure, _) = self { failure } else { nil } }

    package var seconds: Double {
        switch self {
        case .done(_, let seconds), .failed(_, let seconds): seconds
        case .blocked, .skipped: 0
        }
    }

    /// Why it was not attempted or not made, for a blocked or skipped item.
    package var reason: String? {
        switch self {
        case .blocked(let reason): reason
        case .skipped(let sameAs, let sourceWidth): "same bytes as \(sameAs): the source is \(sourceWidth) px wide"
        case .done, .failed: nil
        }
    }

    /// What the item should say though it rendered (an ignored ICC profile).
    package var warning: String? { if case .done(let rendered, _) = self { rendered.warning } else { nil } }
}
