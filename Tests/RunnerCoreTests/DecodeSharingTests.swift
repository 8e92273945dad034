import Testing
import TestSupport

/// The per-source decode plan, computed before any pixel is read: the order outputs render in,
/// which keep a frame, which scale from one, which share a decode and which takes the header's decoder.
@Suite("DecodeSharing: how one source's outputs get their pixels")
struct DecodeSharingTests {
    typealias Plan = DecodeSharing<String>
    let srgb = DecodeSettings(failOn: .none, autorotate: true, colourSpace: .srgb)
    let keep = DecodeSettings(failOn: .none, autorotate: true, colourSpace: .keep)
    let full = Plan.Decode(colourSpace: .srgb, animated: false)

    @Test("a responsive set cascades largest first; two full decodes alike share one, which takes the header's decoder")
    func responsiveSetAndSharedDecode() {
        let own = Plan.Decode(colourSpace: .keep, animated: false)
        let plan = Plan([
            .decode(full, random: false),
            .load("640", area: 640 * 427, settings: srgb, wholeFrame: true),
            .load("1920", area: 1920 * 1280, settings: srgb, wholeFrame: true),
            .decode(full, random: true),
            .load("1280", area: 1280 * 853, settings: srgb, wholeFrame: true),
            .load("square", area: 300 * 300, settings: srgb, wholeFrame: false),
            .load("800 kept colours", area: 800 * 600, settings: keep, wholeFrame: true),
            .decode(own, random: true),
        ])
        #expect(plan.steps == [
            // Kept: smaller loaders with the same settings follow.
            Plan.Step(output: 2, pixels: .load("1920", settings: srgb, candidates: [], keep: true)),
            Plan.Step(output: 4, pixels: .load("1280", settings: srgb, candidates: [0], keep: true)),
            // No later loader decodes with its settings: nothing can scale from it, so it is not kept.
            Plan.Step(output: 6, pixels: .load("800 kept colours", settings: keep, candidates: [], keep: false)),
            Plan.Step(output: 1, pixels: .load("640", settings: srgb, candidates: [0, 1], keep: true)),
            // A cover crop is no whole frame: it scales from one but keeps nothing.
            Plan.Step(output: 5, pixels: .load("square", settings: srgb, candidates: [0, 1, 3], keep: false)),
            Plan.Step(output: 0, pixels: .shared(full, headerDecoder: true)),
            Plan.Step(output: 3, pixels: .shared(full, headerDecoder: false)),
            Plan.Step(output: 7, pixels: .decode(own, random: true, headerDecoder: false)),
        ])
    }

    @Test("an animation reopens every page; the first streaming decode after it takes the header's decoder")
    func animationAndHeaderDecoder() {
        let animated = Plan.Decode(colourSpace: .srgb, animated: true)
        let plan = Plan([.decode(animated, random: true), .decode(full, random: true),
                         .load("thumb", area: 100, settings: srgb, wholeFrame: true), .decode(Plan.Decode(colourSpace: .keep, animated: false), random: false)])
        #expect(plan.steps == [
            Plan.Step(output: 2, pixels: .load("thumb", settings: srgb, candidates: [], keep: false)),
            Plan.Step(output: 0, pixels: .decode(animated, random: true, headerDecoder: false)),
            Plan.Step(output: 1, pixels: .decode(full, random: true, headerDecoder: false)),
            Plan.Step(output: 3, pixels: .decode(Plan.Decode(colourSpace: .keep, animated: false), random: false, headerDecoder: true)),
        ])
    }
}
