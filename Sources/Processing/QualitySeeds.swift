import JobFile

/// Widths and formats of one block seed each other's quality search: the answer for another width
/// of the same format is the first guess, else another format's answer moved by the difference of
/// the two formats' defaults (AVIF's 50 is about WebP's 80). Kept per source while its outputs render.
struct QualitySeeds {
    private var byFormat: [String: (quality: Int, offset: Int)] = [:]

    private static func key(_ set: OutputSetMember, format: String) -> String { set.block + "\u{0}" + format }

    mutating func record(_ quality: Int, for set: OutputSetMember, default fallback: Int) {
        byFormat[Self.key(set, format: set.format)] = (quality, quality - fallback)
    }

    func seed(for set: OutputSetMember, default fallback: Int) -> Int? {
        if let same = byFormat[Self.key(set, format: set.format)] { return same.quality }
        let others = byFormat.filter { $0.key.hasPrefix(set.block + "\u{0}") }.values
        return others.first.map { fallback + $0.offset }
    }
}
