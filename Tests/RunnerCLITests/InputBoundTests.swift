import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The bounds on what runner reads whole or a line at a time (docs/DESIGN.md, Inputs and their
/// bounds): at each bound, just over it, and far over it in little memory. Each runs under a 4 GB
/// address space, so a bound that is missing fails the test rather than the machine.
@Suite("Every input has a bound")
struct InputBoundTests {
    static let addressSpace = 4 << 30
    static let jobFileLimit = 16 << 20
    static let job = #"{"version": 1, "sources": [{"list": "photos.txt"}], "outputs": [{"name": "t", "path": "out/{stem}.png", "chain": [], "format": {"type": "png"}}]}"#

    /// What refusing a job file costs at all: `runner validate` of one that does not exist.
    static func baseline(_ workspace: Workspace) throws -> Int {
        let (result, peak) = try workspace.runMeasured(["validate", "missing.json"], addressSpace: addressSpace)
        #expect(result.status == 2 && peak > 0, "\(result.stderr)")
        return peak
    }

    static func sparseFile(_ path: String, size: Int) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(descriptor >= 0 && ftruncate(descriptor, off_t(size)) == 0)
        close(descriptor)
    }

    @Test("a job file over 16 MiB (a 20 GB sparse file) is refused by its size before it is read, by every command: exit 2 naming its size, the limit and list files, in under 50 MB")
    func hugeJobFileRefusedUnread() throws {
        let workspace = try Workspace()
        Self.sparseFile(workspace.path("huge.json"), size: 20 << 30)
        let baseline = try Self.baseline(workspace)
        let commands = [["huge.json"], ["run", "huge.json"], ["validate", "huge.json"], ["plan", "huge.json"], ["status", "huge.json"],
                        ["failed", "huge.json"], ["report", "huge.json"], ["duplicates", "huge.json"], ["manifest", "huge.json"],
                        ["prune", "huge.json"], ["migrate", "huge.json"], ["unblock", "huge.json", "https://example.invalid/a.jpg"],
                        ["preview", "huge.json", "a.jpg"]]
        for arguments in commands {
            let (result, peak) = try workspace.runMeasured(arguments, addressSpace: Self.addressSpace)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("huge.json: cannot read job file \(workspace.path("huge.json")): it is 21474836480 bytes, "
                                           + "over the limit of 16 MiB: long lists of sources belong in a list file"), "\(arguments): \(result.stderr)")
            #expect(peak - baseline < 50 << 20, "\(arguments): peak RSS \(peak >> 20) MiB, \(baseline >> 20) MiB refusing a missing file")
        }
    }

    @Test("a job file of exactly 16 MiB is read; one byte more is refused naming its size")
    func jobFileAtTheLimit() throws {
        let workspace = try Workspace()
        try "".write(toFile: workspace.path("photos.txt"), atomically: true, encoding: .utf8)
        let padded = Self.job + String(repeating: " ", count: Self.jobFileLimit - Self.job.utf8.count)
        try workspace.writeJob(padded, name: "at.json")
        try workspace.writeJob(padded + " ", name: "over.json")
        let at = try workspace.run(["validate", "at.json"])
        #expect(at.status == 0, "\(at.stderr)")
        let over = try workspace.run(["validate", "over.json"])
        #expect(over.status == 2 && over.stderr.contains("it is 16777217 bytes, over the limit of 16 MiB"), "\(over.stderr)")
    }

    @Test("a job file with no size (a pipe on /dev/stdin fed without end) is refused once 16 MiB came, in under 50 MB")
    func endlessJobFileOnStandardInput() throws {
        let workspace = try Workspace()
        let baseline = try Self.baseline(workspace)
        let (result, peak) = try workspace.runMeasured(["validate", "/dev/stdin"], feed: #"yes '{"version": 1,'"#, addressSpace: Self.addressSpace)
        #expect(result.status == 2 && result.stderr.contains("cannot read job file /dev/stdin: it holds more than the limit of 16 MiB"), "\(result.stderr)")
        #expect(peak - baseline < 50 << 20, "peak RSS \(peak >> 20) MiB, \(baseline >> 20) MiB refusing a missing file")
    }

    @Test("a job file that cannot be read says why in the system's words")
    func unreadableJobFileSaysWhy() throws {
        let workspace = try Workspace()
        // Reading /proc/self/mem at offset 0 fails with EIO.
        let result = try workspace.run(["validate", "/proc/self/mem"])
        #expect(result.status == 2 && result.stderr.contains("cannot read job file /proc/self/mem: Input/output error"), "\(result.stderr)")
    }

    @Test("a list line of 64 KiB is read; one byte longer is a job-file error naming the list, the line and the limit")
    func listLineAtTheLimit() throws {
        let workspace = try Workspace()
        try workspace.writeJob(Self.job)
        let prefix = "https://example.invalid/", suffix = ".jpg"
        let longest = prefix + String(repeating: "a", count: (64 << 10) - prefix.utf8.count - suffix.utf8.count) + suffix
        try "https://example.invalid/first.jpg\n\(longest)\n".write(toFile: workspace.path("photos.txt"), atomically: true, encoding: .utf8)
        let at = try workspace.run(["validate", "job.json"])
        #expect(at.status == 0 && at.stdout.contains("2 items"), "\(at.stdout) \(at.stderr)")
        try "https://example.invalid/first.jpg\nb\(longest)\n".write(toFile: workspace.path("photos.txt"), atomically: true, encoding: .utf8)
        let over = try workspace.run(["validate", "job.json"])
        #expect(over.status == 2 && over.stderr.contains("sources[0].list: line 2 of \(workspace.path("photos.txt")) is longer than 64 KiB"), "\(over.stderr)")
    }

    @Test("a list that is one endless line (a 4 GiB sparse file) is refused after its first 64 KiB, in under 50 MB")
    func endlessListLine() throws {
        let workspace = try Workspace()
        try workspace.writeJob(Self.job)
        Self.sparseFile(workspace.path("photos.txt"), size: 4 << 30)
        let baseline = try Self.baseline(workspace)
        let (result, peak) = try workspace.runMeasured(["validate", "job.json"], addressSpace: Self.addressSpace)
        #expect(result.status == 2 && result.stderr.contains("sources[0].list: line 1 of"), "\(result.stderr)")
        #expect(peak - baseline < 50 << 20, "peak RSS \(peak >> 20) MiB, \(baseline >> 20) MiB refusing a missing file")
    }

    @Test("a state value of 64 MiB is read; one byte longer (a derived value, an item's message) is refused before it is read: exit 2 naming the database and the limit")
    func stateValueAtTheLimit() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["formats/grey.jpg"], to: "in")
        try workspace.write("not an image", to: "in/bad.jpg")
        try workspace.writeJob(#"{"version": 1, "sources": [{"path": "in"}], "derive": ["thumbhash"], "outputs": [{"name": "t", "path": "out/{stem}.png", "chain": [], "format": {"type": "png"}}]}"#)
        let run = try workspace.run(["job.json"])
        #expect(run.status == 1, "\(run.stderr)")
        let state = workspace.path("job.sqlite")
        // A JSON string of `count` bytes, quotes included.
        func string(_ count: Int) -> String { "'\"' || substr(hex(zeroblob(\(count / 2))), 1, \(count - 2)) || '\"'" }
        let refusal = "state database \(state) holds a value runner never writes (one over 64 MiB)"
        try StateDatabase.write(state, "UPDATE derived SET value = \(string(64 << 20))")
        let at = try workspace.run(["manifest", "job.json"])
        #expect(at.status == 0 && at.stdout.utf8.count > 64 << 20, "\(at.stderr)")
        try StateDatabase.write(state, "UPDATE derived SET value = \(string((64 << 20) + 1))")
        let over = try workspace.run(["manifest", "job.json"])
        #expect(over.status == 2 && over.stderr.contains(refusal), "\(over.stderr)")
        try StateDatabase.write(state, "UPDATE item SET error_message = \(string((64 << 20) + 1)) WHERE state = 'failed'")
        let failed = try workspace.run(["failed", "job.json"])
        #expect(failed.status == 2 && failed.stderr.contains(refusal), "\(failed.stderr)")
    }
}
