import Foundation
import Support
import Keys
import Model

/// A perceptual quality target (`"quality": {"ssimulacra2": 75}`): runner writes the lowest
/// quality whose SSIMULACRA2 score, on the decoded output against the pixels the encoder was given,
/// is at least `ssimulacra2`.
package struct QualityTarget: Sendable, Equatable {
    package static let score = Key.number("ssimulacra2", .range(30, 95), .required,
        "The SSIMULACRA2 score to reach: 90 visually lossless, 80 very high, 70 high, 50 medium (30 to 95).")
    package static let maxEncodes = Key.integer("maxEncodes", .range(2, 20), .defaults(8),
        "Most encodes the search may make for one output; one that stops there keeps the best it found and says so.")
    package static let shape = ObjectShape([score, maxEncodes])

    package let ssimulacra2: Double
    package let maxEncodes: Int

    package init(ssimulacra2: Double, maxEncodes: Int = 8) { (self.ssimulacra2, self.maxEncodes) = (ssimulacra2, maxEncodes) }

    package init(reading reader: ObjectReader) throws {
        ssimulacra2 = try reader.read(Self.score)
        maxEncodes = try reader.read(Self.maxEncodes)
        try reader.finish()
    }

    /// Part of the output's recipe, so the metric's version is in every item's fingerprint.
    package var identifier: String { "ssimulacra2:\(QualityOutcome.written(ssimulacra2)),maxEncodes:\(maxEncodes),metric:\(SSIMULACRA2.version)" }
}

/// `format.quality` of a lossy format: a number, or a target the lowest quality meeting it is searched for.
package enum QualitySetting: Sendable, Equatable {
    case fixed(Int)
    case target(QualityTarget)

    /// The `quality` key of a format whose fixed quality defaults to `fallback`.
    package static func key(default fallback: Int) -> Key<QualitySetting> {
        let number = Bound.range(1, 100)
        let schema: [String: JSONValue] = ["oneOf": [.object(number.schema(integer: true)),
                                                      .object(QualityTarget.shape.schema(description: "A perceptual target."))]]
        return Key("quality", .defaults(.fixed(fallback)),
                   "Quality 1-100, higher is larger and closer to the source; or a target such as {\"ssimulacra2\": 75}.",
                   schema: schema, written: { setting in
                       guard case .fixed(let quality) = setting else { return .null }
                       return .number(Double(quality))
                   }) { value, location in
            if case .object = value { return .target(try QualityTarget(reading: ObjectReader(value, path: location, shape: QualityTarget.shape))) }
            guard case .number(let written) = value else {
                throw JobFileError(location, "must be a quality from 1 to 100 or a target such as {\"ssimulacra2\": 75}, not \(value.kindName)")
            }
            if let problem = number.violation(written, integer: true) ?? (written == written.rounded() ? nil : number.integerMessage) {
                throw JobFileError(location, problem)
            }
            return .fixed(Int(written))
        }
    }
}

/// An encoder whose quality a target can search (JPEG, WebP, AVIF, JPEG XL).
extension ObjectReader {
    /// A lossy format's quality: its fixed number (the key's default under a target), its target, and whether the job file gave either.
    package func quality(_ key: Key<QualitySetting>) throws -> (quality: Int, target: QualityTarget?, given: Bool) {
        switch try read(key) {
        case .fixed(let quality): return (quality, nil, has(key))
        case .target(let target):
            guard case .fixed(let fallback)? = key.fallback else { return (80, target, true) }
            return (fallback, target, true)
        }
    }
}

package protocol QualitySearchable: OutputEncoder {
    /// The fixed quality (the format's default under a target).
    var quality: Int { get set }
    var target: QualityTarget? { get set }
    /// Whether the format's own `quality` was written (a target at the output then conflicts).
    var qualityGiven: Bool { get }
    /// The option that makes the coding lossless, when it is on: a target then has nothing to search.
    var losslessOption: String? { get }
}

package struct TargetRefusal: Error { package let reason: String }

extension QualitySearchable {
    package var losslessOption: String? { nil }

    /// The same encoder at another fixed quality, its target kept.
    package func at(quality: Int) -> Self {
        var copy = self
        copy.quality = quality
        return copy
    }

    /// The same encoder under `target` (a block's), or why it cannot take one.
    package func targeting(_ target: QualityTarget) throws(TargetRefusal) -> any OutputEncoder {
        if let refusal { throw refusal }
        var copy = self
        copy.target = target
        return copy
    }

    private var refusal: TargetRefusal? {
        losslessOption.map { TargetRefusal(reason: "a quality target needs lossy coding: \($0) is on") }
    }

    /// Checked once the encoder has read its options: a target of its own needs lossy coding.
    package func checkTarget(_ options: ObjectReader, _ key: Key<QualitySetting>) throws {
        if target != nil, let refusal { throw options.error(key, refusal.reason) }
    }
}
