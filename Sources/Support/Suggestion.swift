/// "Did you mean" for a word that is not one of a known set: job-file keys, op and format names,
/// and command names.
public enum Suggestion {
    /// The known word nearest to `word`, when it is near enough to be a likely typo: at most one
    /// edit per three characters, ignoring case, a swap of neighbours counting as one edit.
    public static func nearest(to word: String, in known: some Sequence<String>) -> String? {
        // Within max(1, n/3) edits of a word of m characters, a word has n <= 1.5 m + 1.5 of its
        // own: a longer one has no near word, and comparing would cost its length times each word's
        // (a 10 MB value took seconds). The byte count is checked first, as it costs nothing.
        let longest = known.map(\.count).max() ?? 0
        guard word.utf8.count <= 4 * (longest * 3 / 2 + 2), word.count <= longest * 3 / 2 + 2 else { return nil }
        let typed = Array(word.lowercased())
        var best: (word: String, distance: Int)?
        for candidate in known.sorted() {
            let distance = editDistance(typed, Array(candidate.lowercased()))
            if distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        guard let best, best.distance < typed.count, best.distance <= max(1, typed.count / 3) else { return nil }
        return best.word
    }

    /// `unknown key "widht" (did you mean "width"?)`, or the known words when none is near.
    public static func unknown(_ noun: String, _ word: String, known: some Sequence<String>) -> String {
        let text = "unknown \(noun) \(Quoted.value(word))"
        if let near = nearest(to: word, in: known) { return text + " (did you mean \"\(near)\"?)" }
        return text + " (known: \(known.sorted().joined(separator: ", ")))"
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps.
    package static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], before[j - 2] + 1) }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
