import Foundation

/// Test-only pause points (fail points, as TiKV's `fail`): a named place that does nothing unless a
/// test arms it, so a test drives a race as a sequence on a machine of any speed.
///
/// `RUNNER_TEST_PAUSE` arms points as `name` or `name@text` (the subject must contain the text),
/// separated by `;`. At an armed point the process writes `NAME.PID`, holding the subject, in
/// `RUNNER_TEST_PAUSE_DIR` and waits until the test removes it, or writes `released` there.
package enum TestPause {
    package static let pointsVariable = "RUNNER_TEST_PAUSE"
    package static let folderVariable = "RUNNER_TEST_PAUSE_DIR"

    /// The worker has a source and is about to render it (subject: the source's path).
    package static let workerTask = "worker.task"
    /// The worker has staged an output under its temporary name (subject: the output's path).
    package static let workerStaged = "worker.staged"
    /// The recorder has published an output (renamed into place, or confirmed by its store) and not yet recorded it (subject: its path).
    package static let recorderUploaded = "recorder.uploaded"
    /// The run's time budget has run out, before the run stops handing out work.
    package static let runBudget = "run.budget"

    /// Pauses here if a test armed `name` for `subject`.
    package static func at(_ name: String, subject: String = "") {
        guard let armed, armed.points.contains(where: { $0.name == name && (subject.contains($0.text) || $0.text.isEmpty) }) else { return }
        let released = armed.folder + "/released"
        guard access(released, F_OK) != 0 else { return }
        let marker = "\(armed.folder)/\(name).\(getpid())"
        // Written whole, then renamed: the test reads the subject as soon as it sees the name.
        guard (try? Data(subject.utf8).write(to: URL(fileURLWithPath: marker), options: .atomic)) != nil else { return }
        while access(marker, F_OK) == 0 && access(released, F_OK) != 0 { usleep(2_000) }
    }

    private static let armed: (folder: String, points: [(name: String, text: String)])? = {
        let environment = ProcessInfo.processInfo.environment
        guard let folder = environment[folderVariable], !folder.isEmpty,
              let list = environment[pointsVariable], !list.isEmpty else { return nil }
        let points = list.split(separator: ";").map { point in
            let parts = point.split(separator: "@", maxSplits: 1).map(String.init)
            return (name: parts[0], text: parts.count > 1 ? parts[1] : "")
        }
        return (folder, points)
    }()
}
