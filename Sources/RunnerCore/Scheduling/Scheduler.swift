import Foundation
import Synchronization

/// Runs work on a bounded pool of supervised worker processes.
///
/// Each slot is a thread that owns at most one worker at a time: it takes the next source,
/// sends it with every output that needs it (one load feeds every chain), and records the
/// replies; a second source waits in the worker's pipe so it goes on without a round trip.
/// Local sources are taken in plan order; downloaded ones as the download stage hands them
/// over (first, so the originals cache stays small). A worker that dies fails only the
/// source it held (kind `crashed`, retried once in the run); a fresh worker takes its place.
/// Workers are replaced after `recycleAfter` sources so memory stays flat over long runs.
final class Scheduler: Sendable {
    struct Settings: Sendable {
        let slots: Int
        let recycleAfter: Int
        let executable: String
        let hello: WorkerHello
        let quietWorkerStderr: Bool
    }

    /// Local sources, read in plan order; nil once they run out.
    typealias LocalSource = @Sendable () -> ScheduledTask?

    private struct Queue {
        var localExhausted = false
        var retries: [ScheduledTask] = []
    }

    private let settings: Settings
    private let local: LocalSource
    private let downloaded: TaskQueue
    private let queue = Mutex(Queue())
    private let control: RunControl
    private let recorder: Recorder
    private let reporter: Reporter
    private let workersStarted = Mutex(0)
    private let spawnFailure = Mutex<String?>(nil)

    init(local: @escaping LocalSource, downloaded: TaskQueue, settings: Settings, control: RunControl,
         recorder: Recorder, reporter: Reporter) {
        self.settings = settings
        self.local = local
        self.downloaded = downloaded
        self.control = control
        self.recorder = recorder
        self.reporter = reporter
    }

    /// Runs until the work is done or the run is stopped; returns how many workers it started.
    /// What finished is the recorder's to count: an item is done only once committed.
    func run() throws -> Int {
        let group = DispatchGroup()
        // Workers start lazily, on a slot's first task: a small job starts only as many as it needs.
        for slot in 0..<settings.slots {
            group.enter()
            let thread = Thread { [self] in
                runSlot()
                group.leave()
            }
            thread.name = "runner.slot.\(slot)"
            thread.start()
        }
        group.wait()
        if let message = spawnFailure.withLock({ $0 }) { throw WorkerProcess.SpawnError(description: message) }
        return workersStarted.withLock { $0 }
    }

    /// The next task, waiting for a download when nothing else is ready; nil when the work is done
    /// or the run is stopping.
    private func nextTask() -> ScheduledTask? {
        guard takingWork else { return nil }
        return readyTask() ?? downloaded.pop()
    }

    private var takingWork: Bool { control.phase == .running && spawnFailure.withLock { $0 == nil } }

    /// The next task only if one is ready now: a retry, a finished download, or a local file.
    private func readyTask() -> ScheduledTask? {
        guard takingWork else { return nil }
        return queue.withLock { queue in
            if !queue.retries.isEmpty { return queue.retries.removeFirst() }
            if let ready = downloaded.tryPop() { return ready }
            guard !queue.localExhausted else { return nil }
            if let task = local() { return task }
            queue.localExhausted = true
            return nil
        }
    }

    /// Tasks a worker holds at once: the one it renders and the next, already in its pipe, so it
    /// never waits for the supervisor between images (that wait was ~10% of a small thumbnail's time).
    private static let tasksInFlight = 2

    private func runSlot() {
        var worker: WorkerProcess?
        var served = 0
        /// Sent to `worker` and not yet answered, oldest first: the worker renders them in order.
        var inFlight: [ScheduledTask] = []
        defer {
            if let worker {
                worker.finish()
                control.unregister(worker: worker.pid)
            }
        }
        // A task counts as started when the worker turns to it: when it is sent to an idle
        // worker, or when the reply before it arrives. One still queued when a worker dies was
        // never attempted.
        func recordStarted(_ scheduled: ScheduledTask) {
            recorder.record(zip(scheduled.keys, scheduled.fingerprints).map { ItemEvent.started(key: $0, fingerprint: $1) })
        }
        func send(_ scheduled: ScheduledTask) {
            if inFlight.isEmpty { recordStarted(scheduled) }
            // A worker that died will not answer; the receive below finds that out.
            _ = worker!.send(scheduled.task)
            inFlight.append(scheduled)
        }
        while true {
            if inFlight.isEmpty {
                guard let first = nextTask() else { break }
                if worker == nil {
                    do {
                        worker = try WorkerProcess(executable: settings.executable, hello: settings.hello,
                                                   quietStderr: settings.quietWorkerStderr)
                        control.register(worker: worker!.pid)
                        workersStarted.withLock { $0 += 1 }
                    } catch {
                        spawnFailure.withLock { $0 = $0 ?? "\(error)" }
                        queue.withLock { $0.retries.append(first) }
                        return
                    }
                }
                send(first)
            }
            // Top up without waiting: a slot never sits on a task while another slot is idle for lack of one.
            while inFlight.count < Self.tasksInFlight, served + inFlight.count < settings.recycleAfter,
                  let next = readyTask() {
                send(next)
            }
            if let reply = worker!.receiveReply(), reply.id == inFlight[0].task.id {
                finish(inFlight.removeFirst(), reply: reply)
                if let next = inFlight.first { recordStarted(next) }
                served += 1
                if served >= settings.recycleAfter {
                    // Nothing else is in flight: the top-up stops at the recycling point.
                    worker!.finish()
                    control.unregister(worker: worker!.pid)
                    worker = nil
                    served = 0
                }
                continue
            }
            // The worker died holding the oldest task (or answered out of turn, which only a broken
            // worker does: it is killed); the others it had not started.
            let died = worker!
            worker = nil
            served = 0
            died.kill()
            let how = died.waitStatus()
            control.unregister(worker: died.pid)
            // It may have staged some of its task's outputs (under this run's pid) before dying;
            // nothing will publish them, and a retry stages its own.
            for request in inFlight[0].task.requests {
                unlink(AtomicFile.temporaryPath(for: request.path, owner: getpid()))
            }
            if control.phase == .abandoning { return }
            var scheduled = inFlight.removeFirst()
            queue.withLock { $0.retries.insert(contentsOf: inFlight, at: 0) }
            inFlight = []
            if scheduled.crashes == 0 {
                reporter.notice("worker \(died.pid) \(how) on \(scheduled.task.source); retrying it once")
                scheduled.crashes += 1
                queue.withLock { $0.retries.append(scheduled) }
                continue
            }
            let failure = ItemFailure(.crashed, "worker process \(how) while processing \(scheduled.task.source)")
            report(scheduled, outcomes: scheduled.keys.map { _ in .failed(failure, duration: 0) })
        }
    }

    private func finish(_ scheduled: ScheduledTask, reply: WorkerReply) {
        let share = reply.seconds / Double(max(scheduled.keys.count, 1))
        var staged: [Recorder.StagedItem] = []
        var failed: [ItemEvent] = []
        for (index, output) in reply.outputs.enumerated() {
            let path = scheduled.task.requests[index].path
            if let rendered = output.rendered {
                staged.append(.init(key: scheduled.keys[index], output: .init(temporary: rendered.temporary, path: path),
                                    duration: share, warning: rendered.warning))
            } else {
                let failure = output.failure ?? ItemFailure(.process, "the worker sent no result")
                failed.append(.finished(key: scheduled.keys[index], outputPath: path, outcome: .failed(failure, duration: share)))
            }
        }
        // A downloaded body that no output could decode is bad image data: blacklisted like a 404
        // (SDWebImage's BadImageData), so the next run sends no request for it.
        let contentFailures = reply.outputs.compactMap { $0.failure }.filter(\.isDecidedByContent)
        if let url = scheduled.url, let first = contentFailures.first, contentFailures.count == reply.outputs.count {
            failed.insert(.blacklisted(url: url, kind: first.kind.rawValue, httpStatus: nil, message: first.description), at: 0)
        }
        recorder.record(failed)
        recorder.record(staged: staged)
    }

    private func report(_ scheduled: ScheduledTask, outcomes: [ItemOutcome]) {
        recorder.record(outcomes.enumerated().map { index, outcome in
            ItemEvent.finished(key: scheduled.keys[index], outputPath: scheduled.task.requests[index].path, outcome: outcome)
        })
    }
}
