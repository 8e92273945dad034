import Model

/// How one source's outputs get their pixels, decided from its header before any pixel is read: the order
/// they render in, which decode the file, keep their frame, scale from a kept one, share a decode or take the
/// streaming decoder the header was read with. `Loader` (thumbnail) is only carried.
package struct DecodeSharing<Loader> {
    /// What one output needs, as its first step and the header say.
    package enum Need {
        /// Its loader step makes a frame of `area` pixels with `settings`; `wholeFrame`: the whole
        /// image scaled, aspect kept, which smaller outputs can scale from.
        case load(Loader, area: Int, settings: DecodeSettings, wholeFrame: Bool)
        /// The whole source decoded; `random`: a step or the orientation reads out of order.
        case decode(Decode, random: Bool)
    }

    /// One way of decoding the whole source; outputs asking for the same one share it.
    package struct Decode: Hashable, Sendable {
        package let colourSpace: ColourSpacePolicy
        /// Every page as one tall strip, rather than the first page only.
        package let animated: Bool

        package init(colourSpace: ColourSpacePolicy, animated: Bool) {
            (self.colourSpace, self.animated) = (colourSpace, animated)
        }
    }

    /// Where one step's first image comes from.
    package enum Pixels {
        /// Its loader: from the file, or scaled from the frame of one of `candidates` (earlier steps
        /// that keep a frame with the same settings, in render order), whichever `Cascade.base`
        /// picks once their sizes are known. `keep`: its frame stays in memory for a later step.
        case load(Loader, settings: DecodeSettings, candidates: [Int], keep: Bool)
        /// A lazy whole decode of its own, streaming unless `random`.
        case decode(Decode, random: Bool, headerDecoder: Bool)
        /// A whole decode several outputs read: decoded into memory once (streaming) by the first
        /// of them to ask, read as it is by the rest.
        case shared(Decode, headerDecoder: Bool)
    }

    package struct Step {
        /// Index of the output's need.
        package let output: Int
        package let pixels: Pixels

        package init(output: Int, pixels: Pixels) { (self.output, self.pixels) = (output, pixels) }
    }

    /// In render order: loader outputs largest first (so smaller ones can scale from them), then
    /// the rest in their own order.
    package let steps: [Step]

    /// `keepingFrames`: whole frames made with settings it accepts are kept to the end, for a use
    /// after the outputs (the source's derived values), besides those a later output scales from.
    package init(_ needs: [Need], keepingFrames extraUse: ((DecodeSettings) -> Bool)? = nil) {
        func area(_ index: Int) -> Int? { if case .load(_, let area, _, _) = needs[index] { area } else { nil } }
        let order = needs.indices.filter { area($0) != nil }.sorted { area($0)! > area($1)! } + needs.indices.filter { area($0) == nil }
        var readers: [Decode: Int] = [:]
        for case .decode(let decode, _) in needs { readers[decode, default: 0] += 1 }
        var headerDecoderTaken = false
        var steps: [Step] = []
        for (position, output) in order.enumerated() {
            switch needs[output] {
            case .load(let loader, _, let settings, let wholeFrame):
                let candidates = steps.indices.filter {
                    if case .load(_, settings, _, keep: true) = steps[$0].pixels { true } else { false }
                }
                // Kept only for a later loader that can scale from it: the same settings.
                let later = order[(position + 1)...].contains { if case .load(_, _, settings, _) = needs[$0] { true } else { false } }
                let keep = wholeFrame && (later || extraUse?(settings) == true)
                steps.append(Step(output: output, pixels: .load(loader, settings: settings, candidates: candidates, keep: keep)))
            case .decode(let decode, let random):
                let shared = readers[decode, default: 0] > 1
                // The header's decoder streams the first page: the first decode that does so takes it.
                let takes = !headerDecoderTaken && !decode.animated && (shared || !random)
                headerDecoderTaken = headerDecoderTaken || takes
                steps.append(Step(output: output, pixels: shared ? .shared(decode, headerDecoder: takes)
                    : .decode(decode, random: random, headerDecoder: takes)))
            }
        }
        self.steps = steps
    }
}

extension DecodeSharing.Pixels: Equatable where Loader: Equatable {}
extension DecodeSharing.Step: Equatable where Loader: Equatable {}
extension DecodeSharing: Equatable where Loader: Equatable {}
