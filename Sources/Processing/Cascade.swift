/// The frame a responsive set's output scales from, instead of decoding its source again.
package enum Cascade {
    /// Index into `frames` (the whole frames kept so far) of the one to scale from, or nil to decode.
    /// `needed` is the frame the output's loader makes, each side rounded up; libvips rounds to
    /// nearest, so sides are compared with a pixel of slack (a 1920x4239 frame serves a 1280 px
    /// output that needs 1280x2826.3). The very frame another output made (the same size in two
    /// formats: one side equal, the other within that pixel) is reused as it is. A frame barely
    /// larger would be resampled twice by a small factor, which softens it, so otherwise only
    /// frames at least 1.5 times as large count (a measured MAD under 1/255). Of those, the
    /// smallest is taken when scaling it costs less than `decodeCost`, the output's own
    /// shrink-on-load decode (`ImageHeader.decodeCost`).
    package static func base(for needed: (width: Int, height: Int), among frames: [(width: Int, height: Int)],
                             decodeCost: Int) -> Int? {
        let usable = frames.indices.filter { index in
            let (width, height) = frames[index]
            let same = (width == needed.width && abs(height - needed.height) <= 1)
                || (height == needed.height && abs(width - needed.width) <= 1)
            return same || (2 * width >= 3 * (needed.width - 1) && 2 * height >= 3 * (needed.height - 1))
        }
        guard let smallest = usable.min(by: { frames[$0].width * frames[$0].height < frames[$1].width * frames[$1].height })
        else { return nil }
        return frames[smallest].width * frames[smallest].height <= decodeCost ? smallest : nil
    }
}
