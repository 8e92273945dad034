import Foundation
import Model
import Imaging

extension ImagePipeline {
    /// The derived values at `indices` of the job's `derive` list, from the smallest whole frame an
    /// output kept in memory (display orientation) that still fills the 100x100 derivation frame, so
    /// a responsive set decodes nothing more; a source with no such frame (a cropped thumbnail, or
    /// no output to render) is decoded once more, with shrink-on-load straight to that size.
    func derivation(_ indices: [Int], source: OpenedSource) -> DerivationOutcome {
        do throws(ItemFailure) {
            VipsError.clearMessages()
            let base = try derivationBase(source)
            let frame = try decodeStep { () throws(VipsError) in try DerivationFrame(base) }
            let values = try indices.map { index throws(ItemFailure) in
                let value = derive.values[index]
                let name = type(of: value).name
                let json = try processStep(name) { () throws(VipsError) in try value.value(of: frame) }
                return SourceDerivation.Value(name: name, identifier: value.identifier, json: json.compact)
            }
            return .computed(SourceDerivation(values: values))
        } catch {
            return .failed(error)
        }
    }

    /// A decoded image in display orientation to scale the derivation frame from.
    private func derivationBase(_ source: OpenedSource) throws(ItemFailure) -> VipsImageHandle {
        let header = source.header
        let (width, height) = (header.displayWidth(autorotate: true), header.displayHeight(autorotate: true))
        // The frame's long side: 100 px, or the source's own when smaller.
        let needed = min(DerivationFrame.side, max(width, height))
        let upright = source.kept.values.filter { Self.derivationCanUse($0.settings, header: header) }.map(\.image)
        if let kept = upright.filter({ max($0.width, $0.height) >= needed }).min(by: { $0.width * $0.height < $1.width * $1.height }) {
            return kept
        }
        let loader = Thumbnail(inside: DerivationFrame.side, DerivationFrame.side)
        let settings = DecodeSettings(failOn: limits.failOn, autorotate: true, colourSpace: .srgb)
        return try decodeStep { () throws(VipsError) in
            try droppingUnusableProfile(loader.load(source.file, header: header, settings: settings), header)
        }
    }

    /// Whether a frame decoded with `settings` shows the picture as the derivation sees it: in
    /// display orientation, in sRGB (or from a source that needs no colour transform).
    static func derivationCanUse(_ settings: DecodeSettings, header: ImageHeader) -> Bool {
        (settings.autorotate || header.orientation == 1) && (settings.colourSpace == .srgb || !header.needsColourTransform)
    }
}
