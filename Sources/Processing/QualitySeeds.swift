import JobFile
import Synchronization

/// Widths of one block seed each other's quality search: the answer for another width of the same
/// format is the first guess. Across formats the answers do not carry over (WebP's 81 came with
/// JPEG's 66 and 72 on the same photo), so each format's first search starts at its default.
/// Kept per source while its outputs render.
struct QualitySeeds {
    private var byFormat: [String: Int] = [:]

    private static func key(_ set: OutputSetMember) -> String { set.block + "\u{0}" + set.format }

    mutating func record(_ quality: Int, for set: OutputSetMember) { byFormat[Self.key(set)] = quality }

    func seed(for set: OutputSetMember) -> Int? { byFormat[Self.key(set)] }
}

/// Each output's last searched quality in one worker: the next source's first guess when nothing
/// closer is known (the photos of one job tend to want similar qualities).
final class RecentQualities: Sendable {
    private let answers = Mutex<[Int: Int]>([:])

    func seed(for output: Int) -> Int? { answers.withLock { $0[output] } }

    func record(_ quality: Int, for output: Int) { answers.withLock { $0[output] = quality } }
}
