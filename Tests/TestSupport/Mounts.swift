import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs mounted for one test at a folder of its workspace (the test machines run as root),
/// so a test can run out of space or turn a folder read-only for real. Unmounted by `unmount()`
/// (call it in a `defer`) or, failing that, when released.
public final class TmpfsMount: @unchecked Sendable {
    public let path: String
    private var mounted = true

    /// Why a mount could not be made (not root, no mount(8), a container without CAP_SYS_ADMIN).
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Mounts a tmpfs of `size` (mount(8)'s syntax: `300k`, `2m`) at `path`, creating the folder.
    public init(at path: String, size: String) throws(Unavailable) {
        self.path = path
        guard getuid() == 0 else { throw Unavailable(description: "mounting a tmpfs needs root (running as uid \(getuid()))") }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Unavailable(description: "cannot create \(path): \(error)")
        }
        let result = Self.command("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", path])
        guard result.status == 0 else {
            throw Unavailable(description: "mount -t tmpfs failed (\(result.status)): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    deinit { unmount() }

    /// Makes the mount read-only (root ignores file modes; only a read-only mount stops it writing).
    public func remount(readOnly: Bool) throws(Unavailable) {
        let result = Self.command("/usr/bin/mount", ["-o", readOnly ? "remount,ro" : "remount,rw", path])
        guard result.status == 0 else {
            throw Unavailable(description: "mount -o remount failed (\(result.status)): \(result.stderr)")
        }
    }

    /// Bytes still free on the mount.
    public var available: Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Fills the mount with the file `name` until at most `leaving` bytes are free (a tmpfs has
    /// no reserved blocks); 0 fills it to the last byte.
    public func fill(_ name: String = "filler", leaving: Int = 0) {
        let descriptor = open(path + "/" + name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0xA5, count: 4096)
        while available > leaving, chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, min($0.count, max(available - leaving, 1))) }) > 0 {}
    }

    /// Unmounts (lazily if something still holds it); safe to call twice.
    public func unmount() {
        guard mounted else { return }
        mounted = false
        if Self.command("/usr/bin/umount", [path]).status != 0 {
            _ = Self.command("/usr/bin/umount", ["-l", path])
        }
    }

    private static func command(_ program: String, _ arguments: [String]) -> CommandResult {
        do {
            return try RunningCommand(program, arguments: arguments, directory: "/", environment: [:]).wait()
        } catch {
            return CommandResult(status: -1, stdout: "", stderr: "\(program): \(error)")
        }
    }
}

/// Runs the built `runner` as the unprivileged user `nobody` (setpriv(1)), for what root never
/// meets: folders it may not read.
public enum AsNobody {
    /// nil when `runner` can run as nobody here, else why not.
    public static let unavailable: String? = {
        guard getuid() == 0 else { return "switching to nobody needs root (running as uid \(getuid()))" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return "setpriv(1) is not installed (util-linux)" }
        let probe = run(["--version"], in: "/")
        return probe.status == 0 ? nil : "runner cannot run as nobody from \(RunnerBinary.path) (exit \(probe.status)): \(probe.stderr)"
    }()

    public static func run(_ arguments: [String], in directory: String) -> CommandResult {
        do {
            return try RunningCommand("/usr/bin/setpriv",
                                      arguments: ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", RunnerBinary.path] + arguments,
                                      directory: directory, environment: [:]).wait()
        } catch {
            return CommandResult(status: -1, stdout: "", stderr: "setpriv: \(error)")
        }
    }
}
