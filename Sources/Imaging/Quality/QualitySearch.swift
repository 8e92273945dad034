import Foundation
import Model

/// The lowest quality whose encode, decoded, scores at least the target against the pixels the
/// encoder was given. Scores rise with quality almost everywhere, so the search brackets the answer
/// between a quality that fails and one that meets the target, stepping by the scores it has seen
/// (about 0.6 points a quality step before two are known), and stops when the two are one step
/// apart: the answer then provably scores at or above the target and the step below it does not.
/// The first guess is the item's remembered answer, a neighbour's (another width of its block), or
/// the format's default.
package enum QualitySearch {
    package struct Encoded {
        package let data: Data
        package let outcome: QualityOutcome
    }

    package static func encode<Encoder: QualitySearchable>(_ pixels: VipsImageHandle, with encoder: Encoder, target: QualityTarget,
                                                          hint: QualityHint?, seed: Int?, metadata: MetadataPolicy) throws(VipsError) -> Encoded {
        if case .remembered(let earlier)? = hint {
            return Encoded(data: try encoder.at(quality: earlier.quality).encode(pixels, metadata: metadata), outcome: earlier.reused)
        }
        let reference: SSIMULACRA2.Reference
        do {
            reference = try SSIMULACRA2.Reference(pixels, allowSingleColour: false)
        } catch let unscorable as SSIMULACRA2.Unscorable {
            let data = try encoder.encode(pixels, metadata: metadata)
            let outcome = QualityOutcome(quality: encoder.quality, score: nil, target: target.ssimulacra2, encodes: 1,
                                         unscorable: unscorable.description, defaultBytes: data.count)
            return Encoded(data: data, outcome: outcome)
        } catch {
            throw error as? VipsError ?? VipsError(operation: "ssimulacra2", message: "\(error)")
        }
        var search = Search(target: target.ssimulacra2, first: seed ?? encoder.quality)
        while let quality = search.next, search.tried.count < target.maxEncodes {
            let data = try encoder.at(quality: quality).encode(pixels, metadata: metadata)
            search.record(quality, score: try score(data, against: reference), data: data)
            if ProcessInfo.processInfo.environment["QTRACE"] != nil { FileHandle.standardError.write("probe \(pixels.width) q\(quality) -> \(search.tried[quality]!.score) bytes \(data.count)\n".data(using: .utf8)!) }
        }
        return try search.result(defaultQuality: encoder.quality) { () throws(VipsError) in
            try encoder.encode(pixels, metadata: metadata)
        }
    }

    /// The encoded bytes decoded as any reader of the file would, then scored.
    private static func score(_ data: Data, against reference: SSIMULACRA2.Reference) throws(VipsError) -> Double {
        let decoded = try VipsRuntime.unblocking(ownOutput: data) { () throws(VipsError) in try VipsImageHandle.decoding(data, operation: "load") }
        do { return try reference.score(decoded) } catch { throw error as? VipsError ?? VipsError(operation: "ssimulacra2", message: "\(error)") }
    }

    /// The bracket so far: every quality tried with its score, the highest that failed, the lowest that passed.
    struct Search {
        let target: Double
        private(set) var tried: [Int: (score: Double, data: Data)] = [:]
        /// 0 and 101 stand for "none yet".
        private(set) var failing = 0, passing = 101
        private(set) var next: Int?
        /// The bracket's width before the last guess inside it: a guess that did not halve it is followed by a bisection.
        private var lastWidth = Int.max

        init(target: Double, first: Int) { (self.target, next) = (target, min(max(first, 1), 100)) }

        mutating func record(_ quality: Int, score: Double, data: Data) {
            tried[quality] = (score, data)
            if score >= target { passing = min(passing, quality) } else { failing = max(failing, quality) }
            next = nextGuess(after: quality, passed: score >= target)
        }

        /// Where the score should cross the target, by the secant through the two tried qualities
        /// nearest it (the assumed slope until there are two), aimed one step to the side not yet
        /// seen, so a good guess ends in two encodes; a guess that did not halve the bracket is
        /// followed by the bracket's middle.
        private mutating func nextGuess(after last: Int, passed: Bool) -> Int? {
            let width = passing - failing
            guard width > 1, passing > 1, failing < 100 else { return nil }
            defer { lastWidth = width }
            if passing <= 100 && failing >= 1 && width * 2 > lastWidth { return failing + width / 2 }
            let crossing = Double(last) + (target - tried[last]!.score) / slope
            let guess = Int(crossing.rounded(.up)) - (passed ? 1 : 0)
            return min(max(guess, failing + 1), passing - 1)
        }

        /// Score points per quality step: the secant through the two tried qualities nearest the
        /// target, else what libwebp and libjpeg give around q80 (about one).
        private var slope: Double {
            let nearest = tried.keys.sorted { abs(tried[$0]!.score - target) < abs(tried[$1]!.score - target) }.prefix(2)
            guard nearest.count == 2, let a = nearest.first, let b = nearest.last else { return 1 }
            let measured = (tried[a]!.score - tried[b]!.score) / Double(a - b)
            return measured > 0.1 ? measured : 1
        }

        /// The lowest passing encode; without one, the best scoring. Capped when the bracket did not close.
        func result(defaultQuality: Int, encodeDefault: () throws(VipsError) -> Data) throws(VipsError) -> Encoded {
            let closed = passing - failing <= 1 || (passing > 100 && failing == 100)
            let chosen = passing <= 100 ? passing : tried.max { $0.value.score < $1.value.score }!.key
            var defaultBytes = tried[defaultQuality]?.data.count
            if defaultBytes == nil { defaultBytes = try encodeDefault().count }
            let outcome = QualityOutcome(quality: chosen, score: tried[chosen]!.score, target: target,
                                         encodes: tried.count + (tried[defaultQuality] == nil ? 1 : 0), capped: !closed,
                                         defaultBytes: defaultBytes)
            return Encoded(data: tried[chosen]!.data, outcome: outcome)
        }
    }
}
