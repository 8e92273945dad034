import Foundation
import Support

/// One run per state database: an exclusive `flock` on `STATE.lock`, holding the owner's pid.
/// The kernel drops the lock when the process dies, however it dies, so a crash never leaves it stuck.
public final class RunLock {
    public struct Held: ExitCoded, CustomStringConvertible {
        public let path: String
        public let ownerPID: Int?
        public var exitCode: Int32 { ExitStatus.locked }
        public var description: String {
            "another run holds \(path)" + (ownerPID.map { " (pid \($0))" } ?? "")
        }
    }

    /// The lock file cannot be created or opened (a folder that cannot be written, a path through a
    /// file): the machine's problem, not the job file's.
    public struct Unavailable: ExitCoded, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var exitCode: Int32 { ExitStatus.stateUnavailable }
        public var description: String { "cannot open the state lock \(path): \(reason)" }
    }

    private let descriptor: Int32

    public init(statePath: String) throws {
        let path = statePath + ".lock"
        do {
            try FileManager.default.createDirectory(atPath: Paths.directory(of: path), withIntermediateDirectories: true)
        } catch {
            throw Unavailable(path: path, reason: "cannot create its folder (\(Paths.directory(of: path)))")
        }
        // O_CLOEXEC: a worker must never inherit the lock and outlive the run holding it.
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Unavailable(path: path, reason: String(cString: strerror(errno))) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var text = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &text, text.count, 0)
            close(descriptor)
            let owner = count > 0 ? Int(String(decoding: text[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) : nil
            throw Held(path: path, ownerPID: owner)
        }
        let pid = "\(getpid())\n"
        ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    /// The most of /proc/locks read, 16 MiB: some 250,000 locks held on the machine; past it, a probe.
    static let largestLockTable = 16 << 20

    /// Whether a live run holds the lock of the database at `statePath`, read from the kernel's
    /// table of locks (/proc/locks) without taking it: a reader that took it even for an instant
    /// would make a run starting at that instant find the job held (exit 75).
    public static func isHeld(statePath: String) -> Bool {
        var info = stat()
        guard stat(statePath + ".lock", &info) == 0 else { return false }
        guard let table = (try? FileDescriptor.readWhole("/proc/locks", limit: largestLockTable)).map({ String(decoding: $0, as: UTF8.self) })
        else { return probe(statePath) }
        // glibc's encoding of st_dev; /proc/locks prints major:minor in hex, then the inode.
        let device = UInt64(info.st_dev)
        let major = (device >> 8) & 0xFFF | (device >> 32) & ~0xFFF
        let minor = device & 0xFF | (device >> 12) & ~0xFF
        let file = (major, minor, UInt64(info.st_ino))
        // `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`; a waiter's line has `->` and holds nothing.
        return table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK" else { return false }
            let parts = fields[5].split(separator: ":")
            guard parts.count == 3, let lineMajor = UInt64(parts[0], radix: 16), let lineMinor = UInt64(parts[1], radix: 16),
                  let inode = UInt64(parts[2]) else { return false }
            return (lineMajor, lineMinor, inode) == file
        }
    }

    /// Without /proc: tries a shared lock and gives it back at once.
    private static func probe(_ statePath: String) -> Bool {
        let descriptor = open(statePath + ".lock", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_SH | LOCK_NB) == 0 else { return true }
        flock(descriptor, LOCK_UN)
        return false
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
