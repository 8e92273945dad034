import Foundation
import Synchronization

/// Runs the plan's work on a bounded pool of supervised worker processes.
///
/// Each slot is a thread that owns at most one worker at a time: it takes the next source,
/// sends it with every output that needs it (one load feeds every chain), and records the
/// replies. A worker that dies fails only the source it held (kind `crashed`, retried once in
/// the run); a fresh worker takes its place. Workers are replaced after `recycleAfter` sources
/// so memory stays flat over long runs.
final class Scheduler: Sendable {
    struct Settings: Sendable {
        let slots: Int
        let recycleAfter: Int
        let executable: String
        let hello: WorkerHello
        let quietWorkerStderr: Bool
    }

    private struct Queue {
        var next = 0
        var retries: [(task: WorkerTask, crashes: Int)] = []
    }

    private let settings: Settings
    private let tasks: [WorkerTask]
    private let itemKeys: [[String]]
    private let queue = Mutex(Queue())
    private let control: RunControl
    private let recorder: Recorder
    private let reporter: Reporter
    private let tally = Mutex(RunSummary())
    private let fatalError = Mutex<String?>(nil)

    init(work: [PlannedSource], settings: Settings, control: RunControl, recorder: Recorder, reporter: Reporter) {
        self.settings = settings
        self.control = control
        self.recorder = recorder
        self.reporter = reporter
        tasks = work.enumerated().map { index, source in
            WorkerTask(id: index, source: source.path,
                       requests: source.items.map { ImagePipeline.Request(outputIndex: $0.outputIndex, path: $0.outputPath) })
        }
        itemKeys = work.map { $0.items.map(\.key) }
    }

    /// Runs until the work is done or the run is stopped; returns the counts of what finished.
    func run() throws -> RunSummary {
        let group = DispatchGroup()
        for slot in 0..<min(settings.slots, max(tasks.count, 1)) {
            group.enter()
            let thread = Thread { [self] in
                runSlot()
                group.leave()
            }
            thread.name = "runner.slot.\(slot)"
            thread.start()
        }
        group.wait()
        if let message = fatalError.withLock({ $0 }) { throw WorkerProcess.SpawnError(description: message) }
        return tally.withLock { $0 }
    }

    private func nextTask() -> (task: WorkerTask, crashes: Int)? {
        guard control.phase == .running, fatalError.withLock({ $0 == nil }) else { return nil }
        return queue.withLock { queue in
            if !queue.retries.isEmpty { return queue.retries.removeFirst() }
            guard queue.next < tasks.count else { return nil }
            defer { queue.next += 1 }
            return (tasks[queue.next], 0)
        }
    }

    /// Sources never handed to a worker because the run stopped early.
    var notStarted: Int {
        queue.withLock { queue in
            (queue.next..<tasks.count).reduce(queue.retries.reduce(0) { $0 + $1.task.requests.count }) {
                $0 + tasks[$1].requests.count
            }
        }
    }

    private func runSlot() {
        var worker: WorkerProcess?
        var served = 0
        defer {
            if let worker {
                worker.finish()
                control.unregister(worker: worker.pid)
            }
        }
        while let (task, crashes) = nextTask() {
            if worker == nil {
                do {
                    worker = try WorkerProcess(executable: settings.executable, hello: settings.hello,
                                               quietStderr: settings.quietWorkerStderr)
                    control.register(worker: worker!.pid)
                    tally.withLock { $0.workersStarted += 1 }
                } catch {
                    fatalError.withLock { $0 = $0 ?? "\(error)" }
                    queue.withLock { $0.retries.append((task, crashes)) }
                    return
                }
            }
            let keys = itemKeys[task.id]
            recorder.record(keys.map { ItemEvent.started(key: $0) })
            if let reply = worker!.perform(task) {
                finish(task, keys: keys, reply: reply)
                served += 1
                if served >= settings.recycleAfter {
                    worker!.finish()
                    control.unregister(worker: worker!.pid)
                    worker = nil
                    served = 0
                }
                continue
            }
            // The worker died holding this task.
            let died = worker!
            worker = nil
            served = 0
            let how = died.waitStatus()
            control.unregister(worker: died.pid)
            if control.phase == .abandoning { return }
            if crashes == 0 {
                reporter.notice("worker \(died.pid) \(how) on \(task.source); retrying it once")
                queue.withLock { $0.retries.append((task, 1)) }
                continue
            }
            let failure = ItemFailure(.crashed, "worker process \(how) while processing \(task.source)")
            let outcomes = keys.map { _ in ItemOutcome.failed(failure, duration: 0) }
            report(task, keys: keys, outcomes: outcomes)
        }
    }

    private func finish(_ task: WorkerTask, keys: [String], reply: WorkerReply) {
        let share = reply.seconds / Double(max(keys.count, 1))
        let outcomes: [ItemOutcome] = reply.outputs.map { output in
            if let failure = output.failure { return .failed(failure, duration: share) }
            return .done(duration: share)
        }
        report(task, keys: keys, outcomes: outcomes)
    }

    private func report(_ task: WorkerTask, keys: [String], outcomes: [ItemOutcome]) {
        recorder.record(outcomes.enumerated().map { index, outcome in
            ItemEvent.finished(key: keys[index], outputPath: task.requests[index].path, outcome: outcome)
        })
        tally.withLock { tally in
            for outcome in outcomes {
                if outcome.failure == nil { tally.done += 1 } else { tally.failed += 1 }
            }
        }
    }
}
