/// Why one item failed. Stored by `kind` in the state database; `message` carries the
/// decoder's or the system's own words.
public struct ItemFailure: Error, Sendable, Codable, Equatable, CustomStringConvertible {
    /// Printed as stored (`too-large`), wherever a message interpolates one.
    public enum Kind: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }
        /// The source could not be read (missing, permission denied, I/O error).
        case unreadable
        /// An HTTP(S) source could not be fetched (status, timeout, too large, not an image...).
        case download
        /// libvips could not decode it: corrupt, truncated, not an image.
        case decode
        /// Larger than `limits.maxPixels` (checked from the header, before decoding).
        case tooLarge = "too-large"
        /// A format only a loader libvips marks untrusted reads, and `limits.blockUntrusted` blocks
        /// it: an image all the same, so a URL serving it is not blacklisted.
        case untrustedFormat = "untrusted-format"
        /// A chain step failed.
        case process
        /// The encoder failed.
        case encode
        /// The output could not be written.
        case write
        /// The worker process died while holding the item.
        case crashed
        /// Another source's item of its output would write the same path (`x//a.jpg` and
        /// `x/a.jpg`, `a.jpg` and `a.png` for `{stem}.webp`): neither runs while both are there.
        case collision
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) { (self.kind, self.message) = (kind, message) }

    /// Worth another attempt within the same run: only a worker crash, which the same input
    /// need not reproduce. Everything else fails the same way until the source changes.
    public var isTransient: Bool { kind == .crashed }

    /// The bytes are no usable image (a downloaded body like that is blacklisted like a 404).
    public var isBadImageData: Bool { kind == .decode || kind == .tooLarge }

    public var description: String { "\(kind.rawValue): \(message)" }
}

extension ItemFailure.Kind {
    /// Decided by the source's bytes and the output's recipe (corrupt, over a limit, a chain step or an
    /// encoder that fails on these pixels): the failure stands until the source, the recipe, the limits
    /// or runner's or libvips' version changes, or `--retry-failed`. The rest depend on the machine or
    /// the network and run again next time, but for a path that names no regular file (`canBeFinal`).
    public var isDecidedByContent: Bool { [.decode, .tooLarge, .untrustedFormat, .process, .encode].contains(self) }
    /// May be the source's own doing, and so stand until the source changes: decided by its content,
    /// or `unreadable` when its path names no regular file (planning tells by its identity).
    public var canBeFinal: Bool { isDecidedByContent || self == .unreadable }
}

/// What the recorder writes to the state database.
package enum ItemEvent: Sendable {
    case started(key: String, fingerprint: String)
    case finished(key: String, outputPath: String, outcome: ItemOutcome)
    /// A remote source revalidated unchanged: its outputs are still up to date.
    case unchanged(key: String, outputPath: String, fingerprint: String)
    /// A remote source revalidated unchanged whose item failed on this same content before: the
    /// recorded failure stands, nothing is decoded.
    case stillFailed(key: String, outputPath: String)
    /// A remote source whose revalidation failed transiently, within `http.staleIfError` of its
    /// last success: its outputs stay up to date, from the cached original.
    case notRevalidated(key: String, outputPath: String, fingerprint: String)
    /// A URL goes on the failed-URL blacklist (recorded in the same transaction as its items).
    case blacklisted(url: String, reason: BlacklistReason, message: String)
    /// A URL comes off the blacklist (a retried download succeeded).
    case unblocked(url: String)
    /// What a worker found a source to be, and the derived values (`derive`) it computed of it, if
    /// any: stored under the source's key and `fingerprint` (its content's); `location` is its path or URL.
    case source(sourceKey: String, location: String, fingerprint: String, SourceFacts, derived: [SourceDerivation.Value])
}
