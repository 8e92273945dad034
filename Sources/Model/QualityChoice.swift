import Foundation
import Support

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

    /// What `runner preview` and the report say: `quality 63, SSIMULACRA2 70.21 (target 70), 38.1 kB at the default`.
    package var summary: String {
        if let unscorable { return "quality \(quality), the format's default: \(unscorable)" }
        var text = "quality \(quality), SSIMULACRA2 " + String(format: "%.2f", score ?? 0) + " (target \(Self.written(target))"
        if !reached { text += ", not reached: the best of \(encodes) encodes" } else if capped { text += ", stopped at maxEncodes: maybe not the lowest" }
        return text + ")" + (defaultBytes.map { ", \(Format.bytes($0)) at the default" } ?? "") + (remembered ? ", remembered" : "")
    }

    /// What the item says though it rendered (`runner failed`, the report's warnings, the manifest's
    /// `warning`): a search that stopped at its cap, a target no quality reaches, an image not scored.
    package var warning: String? {
        let scored = "quality \(quality) scores " + String(format: "%.2f", score ?? 0) + " (target \(Self.written(target)))"
        if let unscorable { return "not scored (\(unscorable)): the format's default quality \(quality)" }
        if !reached { return "no quality reaches the target: \(scored), the best of \(encodes) encodes" }
        if capped { return "the quality search stopped at maxEncodes: \(scored); a lower quality may reach it too" }
        return nil
    }

    package static func written(_ target: Double) -> String { target == target.rounded() ? String(Int(target)) : String(target) }

    /// The same choice made again without a search: one encode.
    package var reused: QualityOutcome {
        QualityOutcome(quality: quality, score: score, target: target, encodes: 1, capped: capped, unscorable: unscorable,
                       defaultBytes: defaultBytes, remembered: true)
    }
}

/// What quality targets did over many outputs (a run's, or everything recorded): their bytes against
/// the same outputs' bytes at their formats' fixed default quality.
public struct QualityTotals: Sendable, Codable, Equatable {
    public var outputs = 0, bytes = 0, defaultBytes = 0, encodes = 0, capped = 0, belowTarget = 0, unscorable = 0

    public init() {}

    package init(outputs: Int, bytes: Int, defaultBytes: Int, encodes: Int, capped: Int, belowTarget: Int, unscorable: Int) {
        (self.outputs, self.bytes, self.defaultBytes, self.encodes) = (outputs, bytes, defaultBytes, encodes)
        (self.capped, self.belowTarget, self.unscorable) = (capped, belowTarget, unscorable)
    }

    package mutating func add(_ outcome: QualityOutcome, bytes size: Int) {
        outputs += 1
        encodes += outcome.encodes
        if let measured = outcome.defaultBytes { (bytes, defaultBytes) = (bytes + size, defaultBytes + measured) }
        if outcome.capped { capped += 1 }
        if outcome.unscorable != nil { unscorable += 1 } else if !outcome.reached { belowTarget += 1 }
    }

    package static func + (a: QualityTotals, b: QualityTotals) -> QualityTotals {
        QualityTotals(outputs: a.outputs + b.outputs, bytes: a.bytes + b.bytes, defaultBytes: a.defaultBytes + b.defaultBytes,
                      encodes: a.encodes + b.encodes, capped: a.capped + b.capped, belowTarget: a.belowTarget + b.belowTarget,
                      unscorable: a.unscorable + b.unscorable)
    }

    /// `24 outputs, 612 kB: 21.0% fewer bytes than at their fixed default quality (775 kB); 3.6 encodes each; 1 stopped at maxEncodes`.
    package var description: String {
        let saved = defaultBytes > 0 ? 100 * Double(defaultBytes - bytes) / Double(defaultBytes) : 0
        var text = "\(Format.plural(outputs, "output")), \(Format.bytes(bytes)): "
            + String(format: "%.1f%% %@ bytes than at their fixed default quality", abs(saved), saved >= 0 ? "fewer" : "more")
            + " (\(Format.bytes(defaultBytes)))" + String(format: "; %.1f encodes each", Double(encodes) / Double(max(outputs, 1)))
        if capped > 0 { text += "; \(capped) stopped at maxEncodes" }
        if belowTarget > 0 { text += "; \(belowTarget) below the target even at quality 100" }
        if unscorable > 0 { text += "; \(unscorable) not scorable (the default quality)" }
        return text
    }
}
