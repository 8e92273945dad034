/// What an earlier run found for an output with a perceptual quality target, handed to the worker
/// with the item (`OutputRequest.quality`).
package enum QualityHint: Sendable, Codable, Equatable {
    /// Chosen for this very fingerprint (source, recipe, target, versions): encode at it, search nothing.
    case remembered(QualityOutcome)
    /// A first guess: the answer for the item's earlier content.
    case seed(Int)
}

/// How an output with a target got its quality, as the manifest, the summary and the report tell it.
package struct QualityOutcome: Sendable, Codable, Equatable {
    package let quality: Int
    /// Its SSIMULACRA2 score; nil when the image could not be scored (`unscorable` says why).
    package let score: Double?
    package let target: Double
    /// Encodes this render took (1 when remembered).
    package let encodes: Int
    /// The search reached its cap before it proved the quality the lowest that meets the target.
    package let capped: Bool
    /// Why the image got the format's fixed default instead (a single colour, under 8x8).
    package let unscorable: String?
    /// Its bytes at the format's fixed default quality, for what the target saved.
    package let defaultBytes: Int?
    package let remembered: Bool

    package init(quality: Int, score: Double?, target: Double, encodes: Int, capped: Bool = false, unscorable: String? = nil,
                 defaultBytes: Int?, remembered: Bool = false) {
        (self.quality, self.score, self.target, self.encodes, self.capped) = (quality, score, target, encodes, capped)
        (self.unscorable, self.defaultBytes, self.remembered) = (unscorable, defaultBytes, remembered)
    }

    /// At or above its target (an unscored one is not).
    package var reached: Bool { score.map { $0 >= target } ?? false }

    /// The same choice made again without a search: one encode.
    package var reused: QualityOutcome {
        QualityOutcome(quality: quality, score: score, target: target, encodes: 1, capped: capped, unscorable: unscorable,
                       defaultBytes: defaultBytes, remembered: true)
    }
}
