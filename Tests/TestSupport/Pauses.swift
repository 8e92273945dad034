import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The test's side of runner's pause points (`TestPause` in Support): arm points for a run, wait
/// until a process is paused at one, act, let it go. A wait has a bound only so that a broken
/// build fails instead of hanging; nothing depends on how fast the machine is.
public final class Pauses: @unchecked Sendable {
    /// A process paused at a point: its pid and the point's subject (a source's or an output's path).
    public struct Paused: Hashable, Sendable {
        public let point: String
        public let pid: pid_t
        public let subject: String
        fileprivate let file: String
    }

    public let folder: String
    private let points: [String]
    private var seen: Set<String> = []

    /// `points` as `name` or `name@text` (`worker.task@p010`); the folder is made in `workspace`.
    public init(_ points: String..., in workspace: Workspace) throws {
        folder = workspace.path("pauses")
        self.points = points
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// What a run needs in its environment for these points to pause.
    public var environment: [String: String] {
        ["RUNNER_TEST_PAUSE": points.joined(separator: ";"), "RUNNER_TEST_PAUSE_DIR": folder]
    }

    /// Waits until `count` processes not returned before are paused at `point`; fewer if `run` ends first.
    @discardableResult
    public func wait(for point: String, count: Int = 1, of run: RunningCommand, timeout: Double = 300) -> [Paused] {
        var found: [Paused] = []
        run.waitUntil(timeout: timeout) {
            found += fresh(point)
            return found.count >= count
        }
        return found
    }

    /// Lets one paused process go on.
    public func release(_ paused: Paused) {
        seen.remove((paused.file as NSString).lastPathComponent)
        unlink(paused.file)
    }

    /// Lets every paused process go on, and no point pause again.
    public func releaseAll() throws {
        try Data().write(to: URL(fileURLWithPath: folder + "/released"))
    }

    private func fresh(_ point: String) -> [Paused] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.sorted().compactMap { name -> Paused? in
            guard name.hasPrefix(point + "."), let pid = pid_t(name.dropFirst(point.count + 1)), !seen.contains(name) else { return nil }
            let file = folder + "/" + name
            guard let subject = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
            seen.insert(name)
            return Paused(point: point, pid: pid, subject: subject, file: file)
        }
    }
}
