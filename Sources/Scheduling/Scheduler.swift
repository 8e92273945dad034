import Foundation
import Synchronization
import Support
import Model
import Output
import Reporting
import Loading

/// Runs work on a bounded pool of supervised worker processes. Each slot is a thread that owns at most one
/// worker at a time: it takes the next source, sends it with every output that needs it (one load feeds every
/// chain), and records the replies; a second source waits in the worker's pipe so it goes on without a round
/// trip. Local sources are taken in plan order; downloaded ones as the download stage hands them over (first,
/// so the originals cache stays small). A worker that dies, or breaks the protocol, fails only the source it
/// held (kind `crashed`, retried once in the run); a fresh worker takes its place. Workers are replaced after
/// `recycleAfter` sources so memory stays flat over long runs.
package final class Scheduler: Sendable {
    package struct Settings: Sendable {
        package let slots: Int
        package let recycleAfter: Int
        /// Seconds a worker may take to answer for one source (`limits.itemTimeout`).
        package let itemTimeout: Double

        package init(slots: Int, recycleAfter: Int, itemTimeout: Double = 600) {
            (self.slots, self.recycleAfter, self.itemTimeout) = (slots, recycleAfter, itemTimeout)
        }
    }

    /// Local sources, read in plan order; nil once they run out.
    package typealias LocalSource = @Sendable () throws -> ScheduledTask?

    private struct Queue {
        var localExhausted = false
        var retries: [ScheduledTask] = []
    }

    let settings: Settings
    private let launcher: WorkerLauncher
    private let local: LocalSource
    private let downloaded: TaskQueue
    private let queue = Mutex(Queue())
    let control: RunControl
    let recorder: Recorder
    let reporter: Reporter
    private let workersStarted = Mutex(0)
    /// Slots that are running and hold no task: while one waits, the others do not queue a second
    /// task for their workers (a 2-image job runs on two workers, not one after the other on one).
    let hungrySlots: Atomic<Int>
    /// What stopped the run from the scheduler's side (a worker that cannot start, a damaged plan).
    private let fatalError = Mutex<(any Error)?>(nil)

    package init(local: @escaping LocalSource, downloaded: TaskQueue, settings: Settings, launcher: WorkerLauncher,
                 control: RunControl, recorder: Recorder, reporter: Reporter) {
        (self.settings, self.launcher, self.local, self.downloaded) = (settings, launcher, local, downloaded)
        (self.control, self.recorder, self.reporter) = (control, recorder, reporter)
        hungrySlots = Atomic(settings.slots)
    }

    /// Runs until the work is done or the run is stopped; returns how many workers it started.
    /// What finished is the recorder's to count: an item is done only once committed.
    package func run() throws -> Int {
        let group = DispatchGroup()
        // A slot takes its worker on its first task: one the launcher prestarted while planning, else a new one.
        for slot in 0..<settings.slots {
            group.enter()
            let thread = Thread { [self] in
                WorkerSlot(scheduler: self).run()
                group.leave()
            }
            thread.name = "runner.slot.\(slot)"
            thread.start()
        }
        group.wait()
        launcher.close()
        if let error = fatalError.withLock({ $0 }) { throw error }
        return workersStarted.withLock { $0 }
    }

    /// The next task, waiting for a download when nothing else is ready; nil when the work is done
    /// or the run is stopping.
    func nextTask() -> ScheduledTask? { takingWork ? readyTask() ?? downloaded.pop() : nil }

    private var takingWork: Bool { control.phase == .running && fatalError.withLock { $0 == nil } }

    /// The next task only if one is ready now: a retry, a finished download, or a local file.
    func readyTask() -> ScheduledTask? {
        guard takingWork else { return nil }
        do {
            return try queue.withLock { queue in
                if !queue.retries.isEmpty { return queue.retries.removeFirst() }
                if let ready = downloaded.tryPop() { return ready }
                guard !queue.localExhausted else { return nil }
                if let task = try local() { return task }
                queue.localExhausted = true
                return nil
            }
        } catch {
            stop(because: error)
            return nil
        }
    }

    /// Starts a worker for a slot, or stops the run when none can start (the task waits for a retry
    /// that never comes: the run ends with it not started). A worker killed before it read its
    /// first message is replaced, a few times, like one that crashed.
    func startWorker(for task: ScheduledTask) -> WorkerProcess? {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let worker = try launcher.take()
                control.register(worker: worker.pid)
                workersStarted.withLock { $0 += 1 }
                return worker
            } catch let error as WorkerProcess.SpawnError where error.diedAtStart && attempt < 3 {
                reporter.notice("\(error); starting another")
            } catch {
                retry([task])
                stop(because: error)
                return nil
            }
        }
    }

    func retry(_ tasks: [ScheduledTask], first: Bool = false) {
        queue.withLock { $0.retries.insert(contentsOf: tasks, at: first ? 0 : $0.retries.count) }
    }

    private func stop(because error: any Error) {
        fatalError.withLock { $0 = $0 ?? error }
    }
}

/// One slot of the scheduler: the worker it owns now, and the tasks that worker holds.
private final class WorkerSlot {
    private let scheduler: Scheduler
    private var worker: WorkerProcess?
    private var served = 0
    /// Sent to `worker` and not yet answered, oldest first: the worker renders them in order.
    private var inFlight: [(id: Int, task: ScheduledTask)] = []
    /// Counted in the scheduler's `hungrySlots`: running and holding no task.
    private var hungry = true

    /// Tasks a worker holds at once: the one it renders and the next, already in its pipe, so it
    /// never waits for the supervisor between images (that wait was ~10% of a small thumbnail's time).
    private static let tasksInFlight = 2

    init(scheduler: Scheduler) { self.scheduler = scheduler }

    func run() {
        defer {
            setHungry(false)
            retire()
        }
        while true {
            if inFlight.isEmpty {
                setHungry(true)
                guard let first = scheduler.nextTask() else { return }
                if worker == nil { worker = scheduler.startWorker(for: first) }
                guard let worker else { return }
                send(first, to: worker)
                setHungry(false)
            }
            guard let worker else { return }
            topUp(worker)
            do throws(ChannelError) {
                // The watchdog: a worker that neither answers nor dies within the time is broken.
                let reply = try worker.receiveReply(within: scheduler.settings.itemTimeout)
                guard reply.id == inFlight[0].id else { throw ChannelError.malformed("a reply to task \(reply.id) out of turn") }
                accept(reply)
            } catch {
                guard replaceBroken(worker, error) else { return }
            }
        }
    }

    /// Top up without waiting: a slot never sits on a task while another slot is idle for lack of one.
    private func topUp(_ worker: WorkerProcess) {
        while inFlight.count < Self.tasksInFlight, served + inFlight.count < scheduler.settings.recycleAfter,
              scheduler.hungrySlots.load(ordering: .acquiring) == 0, let next = scheduler.readyTask() {
            send(next, to: worker)
        }
    }

    private func send(_ task: ScheduledTask, to worker: WorkerProcess) {
        if inFlight.isEmpty { recordStarted(task) }
        let message = WorkerTask(source: task.source, requests: task.requests, derive: task.derivation?.values ?? [],
                                 hashContent: task.derivation.map { $0.contentHash == nil } ?? false)
        // A worker that died will not answer; the receive finds that out.
        _ = worker.send(message)
        inFlight.append((message.id, task))
    }

    /// A task counts as started when the worker turns to it: when it is sent to an idle worker, or
    /// when the reply before it arrives. One still queued when a worker dies was never attempted.
    private func recordStarted(_ task: ScheduledTask) {
        scheduler.recorder.record(zip(task.keys, task.fingerprints).map { ItemEvent.started(key: $0, fingerprint: $1) })
    }

    private func accept(_ reply: WorkerReply) {
        let task = inFlight.removeFirst().task
        var events = task.finished(reply.outcomes)
        // A downloaded body that no output could decode is bad image data: blacklisted like a 404
        // (SDWebImage's BadImageData), so the next run sends no request for it.
        let contentFailures = reply.outcomes.compactMap(\.failure).filter(\.isBadImageData)
        if let url = task.url, let first = contentFailures.first, contentFailures.count == reply.outcomes.count {
            events.insert(.blacklisted(url: url, reason: .image(first.kind), message: first.description), at: 0)
        }
        var derived: [SourceDerivation.Value] = []
        switch reply.derivation {
        case .computed(let derivation)? where task.derivation != nil: derived = derivation.values
        case .failed(let failure)?:
            // Not stored: the next run tries again. A source whose outputs failed says so already.
            if !reply.outcomes.contains(where: { $0.failure != nil }) { scheduler.reporter.notice("derive: \(task.location): \(failure)") }
        case .computed?, nil: break
        }
        if var facts = reply.source {
            facts.contentHash = facts.contentHash ?? task.derivation?.contentHash
            events.append(.source(sourceKey: task.sourceKey, location: task.location, fingerprint: task.sourceFingerprint, facts,
                                  derived: derived))
        }
        scheduler.recorder.record(events)
        if !reply.warnings.isEmpty { scheduler.reporter.libvipsWarnings(task.source, reply.warnings) }
        if let next = inFlight.first { recordStarted(next.task) }
        served += 1
        // Nothing else is in flight at the recycling point: the top-up stops there.
        if served >= scheduler.settings.recycleAfter { retire() }
    }

    /// The worker died holding the oldest task, or broke the protocol (it is killed); the other
    /// tasks it held were never started and go back to the queue. Returns false when abandoning.
    private func replaceBroken(_ broken: WorkerProcess, _ error: ChannelError) -> Bool {
        (worker, served) = (nil, 0)
        broken.kill()
        let ended = broken.waitStatus()
        scheduler.control.unregister(worker: broken.pid)
        var held = inFlight.removeFirst().task
        // It may have staged some of its task's outputs (under this run's pid) before dying;
        // nothing will publish them, and a retry stages its own.
        for request in held.requests { unlink(AtomicFile.temporaryPath(for: request.path, owner: getpid())) }
        if scheduler.control.phase == .abandoning { return false }
        scheduler.retry(inFlight.map(\.task), first: true)
        inFlight = []
        let how = switch error {
        case .closed: ended
        case .timedOut: "stopped answering and was killed after limits.itemTimeout (\(Int(scheduler.settings.itemTimeout)) s)"
        case .malformed: "sent a \(error) and was killed"
        }
        // A source that outlasted the watchdog would only outlast it again: no retry in this run.
        if held.crashes == 0 && error != .timedOut {
            scheduler.reporter.notice("worker \(broken.pid) \(how) on \(held.source); retrying it once")
            held.crashes += 1
            scheduler.retry([held])
        } else {
            let failure = ItemFailure(.crashed, "worker process \(how) while processing \(held.source)")
            scheduler.recorder.record(held.finished(held.requests.map { _ in .failed(failure, seconds: 0) }))
        }
        return true
    }

    private func setHungry(_ now: Bool) {
        guard now != hungry else { return }
        hungry = now
        scheduler.hungrySlots.add(now ? 1 : -1, ordering: .releasing)
    }

    /// Lets the worker finish and exit (end of input).
    private func retire() {
        guard let worker else { return }
        worker.finish()
        scheduler.control.unregister(worker: worker.pid)
        (self.worker, served) = (nil, 0)
    }
}
