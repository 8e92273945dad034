import Foundation
import Synchronization
import Support

/// A supervised image worker: this same executable started as `runner worker`, fed tasks over
/// its stdin and answering on its stdout. Owns the child's pid and both pipe ends. Used by one
/// thread at a time: the launcher hands it to one slot, which alone talks to it.
package final class WorkerProcess: @unchecked Sendable {
    package let pid: pid_t
    private let channel: LineChannel
    private let toWorker: Int32
    private let fromWorker: Int32
    private var reaped = false
    private var inputOpen = true

    package struct SpawnError: Error, CustomStringConvertible {
        package let description: String
        /// The worker started but was gone before it took its first message (killed from outside):
        /// a new one may well start; a spawn that fails outright will fail again.
        package var diedAtStart = false
    }

    /// Serializes pipe creation and spawning: a pipe end must be close-on-exec before any
    /// other slot spawns, or a sibling worker would inherit it and hide this one's exit.
    private static let spawnLock = Mutex(())

    package init(executable: String, hello: WorkerHello, quietStderr: Bool) throws {
        (pid, toWorker, fromWorker) = try Self.spawnLock.withLock { _ in
            try Self.spawn(executable: executable, quietStderr: quietStderr)
        }
        channel = LineChannel(input: fromWorker, output: toWorker)
        guard channel.send(hello) else { throw SpawnError(description: "worker \(pid) exited at start", diedAtStart: true) }
    }

    private static func spawn(executable: String, quietStderr: Bool) throws -> (pid_t, Int32, Int32) {
        var taskPipe: [Int32] = [0, 0]
        var replyPipe: [Int32] = [0, 0]
        guard pipe(&taskPipe) == 0, pipe(&replyPipe) == 0 else {
            throw SpawnError(description: "cannot create pipes: \(String(cString: strerror(errno)))")
        }
        for descriptor in taskPipe + replyPipe { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, taskPipe[0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, replyPipe[1], STDOUT_FILENO)
        if quietStderr {
            // libvips prints decoder warnings; the item's failure already carries what matters.
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup(executable), strdup("worker"), nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, nil, &argv, environ)
        close(taskPipe[0])
        close(replyPipe[1])
        guard status == 0 else {
            close(taskPipe[1])
            close(replyPipe[0])
            throw SpawnError(description: "cannot start worker \(executable): \(String(cString: strerror(status)))")
        }
        return (child, taskPipe[1], replyPipe[0])
    }

    // Both pipe ends close before the wait: a worker blocked writing a reply gets EPIPE rather than waiting for ever.
    deinit {
        close(fromWorker)
        finish()
    }

    /// Queues a task in the worker's input; false when the worker is gone.
    package func send(_ task: WorkerTask) -> Bool { channel.send(task) }

    /// Waits for the reply to the oldest task sent: `closed` when the worker died first, `timedOut`
    /// when `seconds` pass first.
    package func receiveReply(within seconds: Double? = nil) throws(ChannelError) -> WorkerReply {
        try channel.receive(WorkerReply.self, within: seconds)
    }

    /// Asks the worker to exit (end of input) and waits for it.
    package func finish() {
        if inputOpen { close(toWorker) }
        inputOpen = false
        if !reaped { _ = waitStatus() }
    }

    package func kill(_ signal: Int32 = SIGKILL) { Glibc.kill(pid, signal) }

    /// Waits for the child and describes how it ended (`killed by signal 11 (SIGSEGV)`).
    package func waitStatus() -> String {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        let signal = status & 0x7f
        if signal != 0 { return "was killed by signal \(signal) (\(String(cString: strsignal(signal))))" }
        return "exited with status \((status >> 8) & 0xff)"
    }
}
