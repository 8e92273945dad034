/// One output to render from a source: which of the job's outputs, and where it goes.
package struct OutputRequest: Sendable, Codable, Equatable {
    package let outputIndex: Int
    package let path: String
    /// What an earlier run found for an output with a quality target.
    package var quality: QualityHint?

    package init(outputIndex: Int, path: String, quality: QualityHint? = nil) {
        (self.outputIndex, self.path, self.quality) = (outputIndex, path, quality)
    }
}

/// A rendered output, staged complete under a temporary name for the supervisor to publish.
public struct RenderedOutput: Sendable, Codable, Equatable {
    package let width: Int
    package let height: Int
    package let bytes: Int
    /// Where the output waits, complete but not yet durable, for the supervisor to publish it.
    package let temporary: String
    /// Something the item should say though it rendered (an ignored ICC profile).
    package let warning: String?
    /// The source's pixel size, from its header (a report's preview tells the size of the output it shows).
    package var sourceWidth: Int?, sourceHeight: Int?
    /// What the manifest says of the output (`OutputFacts`); nil from an older worker.
    package var facts: OutputFacts?
    /// Where it is published when not at the path asked for: a `{hash}` name, its digits the bytes' hash.
    package var path: String?
    /// How an output with a quality target got its quality.
    package var quality: QualityOutcome?

    package init(width: Int, height: Int, bytes: Int, temporary: String, warning: String?) {
        (self.width, self.height, self.bytes, self.temporary, self.warning) = (width, height, bytes, temporary, warning)
    }
}

/// What a site manifest says of a rendered output, recorded with the item (`v9: output facts`), so
/// `runner manifest` needs nothing but the state database. What it says of the source is in
/// `SourceFacts`, recorded once per source.
public struct OutputFacts: Sendable, Codable, Equatable {
    /// The output file's media type (`image/webp`).
    package let mediaType: String
    /// FNV-1a 64 of the output file's bytes, 16 hex digits (the manifest prints the first 8).
    package let contentHash: String

    /// The manifest's `hash` and a `{hash}` name's digits.
    package var shortHash: String { String(contentHash.prefix(8)) }

    package init(mediaType: String, contentHash: String) {
        (self.mediaType, self.contentHash) = (mediaType, contentHash)
    }
}
