import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A job whose one source is `source` (JSON), writing `out/{dir}/{stem}.jpg` thumbnails.
@discardableResult
func discoveryJob(_ workspace: Workspace, source: String) throws -> String {
    try workspace.writeJob("""
    {"version": 1, "name": "found", "sources": [\(source)],
     "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg",
                  "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}}],
     "state": "state/found.sqlite"}
    """)
}

/// The item keys `runner plan --list` prints, relative to the workspace.
func plannedKeys(_ workspace: Workspace, _ job: String) throws -> [String] {
    let listing = try workspace.run(["plan", job, "--list"])
    #expect(listing.status == 0, "\(listing.stderr)")
    return listing.stdout.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: "\t")
        return fields.count == 3 ? String(fields[1]).replacingOccurrences(of: workspace.root + "/", with: "") : nil
    }.sorted()
}

/// Writes a copy of a fixture under a name given as raw bytes (which need not be UTF-8).
func writeFixture(_ fixture: String, toBytes name: [UInt8]) throws {
    let data = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(fixture)))
    let descriptor = (name + [0]).withUnsafeBufferPointer {
        $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
    }
    try #require(descriptor >= 0, "open: \(String(cString: strerror(errno)))")
    defer { close(descriptor) }
    #expect(data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == data.count)
}

@Suite("Finding sources on a hostile file system", .serialized)
struct DiscoveryFaultTests {
    @Test("symlink loops (a folder linking to itself or its parent, files linking in a circle) are walked once; looping file links fail alone", arguments: [
        #"{"path": "in", "recursive": true}"#, #"{"glob": "in/**/*.jpg"}"#,
    ])
    func symlinkLoops(source: String) throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try workspace.copyFixtures(["photos/fig-bowl.jpg"], to: "in/sub")
        try workspace.copyFixtures(["extra/ladybird.jpg"], to: "elsewhere")
        let folder = workspace.path("in/")
        #expect(symlink("..", folder + "sub/up") == 0)
        #expect(symlink(".", folder + "sub/here") == 0)
        #expect(symlink(workspace.path("in"), folder + "sub/root") == 0)
        // Not a loop: a link to a folder outside is followed.
        #expect(symlink("../elsewhere", folder + "outside") == 0)
        #expect(symlink("loop-b.jpg", folder + "loop-a.jpg") == 0)
        #expect(symlink("loop-a.jpg", folder + "loop-b.jpg") == 0)
        let job = try discoveryJob(workspace, source: source)

        let expected = ["friends.jpg", "loop-a.jpg", "loop-b.jpg", "outside/ladybird.jpg", "sub/fig-bowl.jpg"].map { "in/\($0)@t" }
        #expect(try plannedKeys(workspace, job) == expected)
        let result = try workspace.run([job])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("3 done, 2 failed"), "\(result.stdout)")
        let failed = try failures(workspace, job)
        for name in ["loop-a.jpg@t", "loop-b.jpg@t"] {
            #expect(failed[name]?.kind == "unreadable" && failed[name]?.message.contains("Too many levels of symbolic links") == true,
                    "\(name): \(String(describing: failed[name]))")
        }
        #expect(workspace.files(in: "out") == ["friends.jpg", "outside/ladybird.jpg", "sub/fig-bowl.jpg"])
    }

    @Test("a folder the run may not list (running as nobody) is a job-file error naming it: its files are never taken for gone", arguments: [
        (#"{"path": "in", "recursive": true}"#, "sources[0].path"), (#"{"glob": "in/**/*.jpg"}"#, "sources[0].glob"),
    ])
    func unreadableFolder(source: String, location: String) throws {
        if let reason = AsNobody.unavailable { try Test.cancel("skipped: \(reason)") }
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try workspace.copyFixtures(["photos/fig-bowl.jpg"], to: "in/private")
        let job = try discoveryJob(workspace, source: source)
        // The first run (as root) makes both outputs; then the folder becomes root's alone.
        #expect(try workspace.run([job]).stdout.contains("2 done"))
        let nobody = getpwnam("nobody").pointee
        for path in [workspace.root, workspace.path("in")] { chmod(path, 0o755) }
        chmod(workspace.path("in/friends.jpg"), 0o644)
        chmod(workspace.path("in/private"), 0o700)
        for path in ["state", "state/found.sqlite", "state/found.sqlite.lock", "out", "out/private"] {
            chown(workspace.path(path), nobody.pw_uid, nobody.pw_gid)
        }
        let message = "\(location): \(workspace.path("in/private")): Permission denied"
        for command in [[job], ["plan", job], ["prune", job, "--delete"]] {
            let result = AsNobody.run(command, in: workspace.root)
            #expect(result.status == 2, "\(command): \(result.stdout) \(result.stderr)")
            #expect(result.stderr.contains(message), "\(command): \(result.stderr)")
        }
        // Nothing was pruned or redone: the private source's output and record stand.
        #expect(workspace.files(in: "out") == ["friends.jpg", "private/fig-bowl.jpg"])
        #expect(try StateDatabase(path: workspace.path("state/found.sqlite")).count(state: "done") == 2)
    }

    @Test("a file or folder whose name is not UTF-8 fails its item, or the job, saying so; other files are done")
    func nonUTF8Names() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try writeFixture("photos/fig-bowl.jpg", toBytes: Array(workspace.path("in/caf").utf8) + [0xE9] + Array(".jpg".utf8))
        let job = try discoveryJob(workspace, source: #"{"path": "in", "recursive": true}"#)
        let result = try workspace.run([job])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("1 done, 1 failed"), "\(result.stdout)")
        var failed = try failures(workspace, job)
        #expect(failed["caf\u{FFFD}E9.jpg@t"]?.kind == "unreadable", "\(failed)")
        #expect(failed["caf\u{FFFD}E9.jpg@t"]?.message.contains("its name is not valid UTF-8") == true, "\(failed)")
        // Two names that differ only in such bytes are two items, each failing on its own.
        try writeFixture("photos/fig-bowl.jpg", toBytes: Array(workspace.path("in/caf").utf8) + [0xE8] + Array(".jpg".utf8))
        let again = try workspace.run([job])
        #expect(again.status == 1 && again.stdout.contains("0 done, 2 failed, 1 up to date"), "\(again.stdout)")
        failed = try failures(workspace, job)
        #expect(Set(failed.keys).isSuperset(of: ["caf\u{FFFD}E8.jpg@t", "caf\u{FFFD}E9.jpg@t"]), "\(failed)")
        #expect(workspace.files(in: "out") == ["friends.jpg"])

        // A folder so named cannot be listed by name: the job stops before any work, naming it.
        try FileManager.default.createDirectory(atPath: workspace.path("nested"), withIntermediateDirectories: true)
        let folder = Array(workspace.path("nested/d").utf8) + [0xFF]
        #expect((folder + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { mkdir($0.baseAddress!, 0o755) } } == 0)
        try writeFixture("photos/fig-bowl.jpg", toBytes: folder + Array("/x.jpg".utf8))
        let nested = try discoveryJob(workspace, source: #"{"path": "nested", "recursive": true}"#)
        let refused = try workspace.run([nested])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("sources[0].path: \(workspace.path("nested/d"))\u{FFFD}FF: its name is not valid UTF-8"), "\(refused.stderr)")
    }

    @Test("a 255-byte file name is processed (its temporary file's name is shortened); an output name over 255 bytes fails that item alone")
    func longNames() throws {
        let workspace = try Workspace()
        let longest = String(repeating: "L", count: 251) + ".jpg"
        // Multi-byte letters: the temporary name is cut between characters, never inside one.
        let accented = String(repeating: "é", count: 120) + ".jpg"
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        for name in [longest, accented] {
            try FileManager.default.copyItem(atPath: Fixtures.path("photos/fig-bowl.jpg"), toPath: workspace.path("in/" + name))
        }
        #expect(longest.utf8.count == 255 && accented.utf8.count == 244)
        let job = try discoveryJob(workspace, source: #"{"path": "in"}"#)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(workspace.files(in: "out") == [accented, longest, "friends.jpg"].sorted())
        #expect(ImageProbe.open(workspace.path("out/" + longest))?.width == 32)
        #expect(ImageProbe.open(workspace.path("out/" + accented))?.width == 32)

        // `-thumb` makes the first output's name 261 bytes: no file system takes it.
        try workspace.writeJob(try String(contentsOfFile: job, encoding: .utf8).replacingOccurrences(of: "{stem}.jpg", with: "{stem}-thumb.jpg"))
        let tooLong = try workspace.run([job])
        #expect(tooLong.status == 1, "\(tooLong.stderr)")
        let failed = try failures(workspace, job)
        #expect(failed.count == 1 && failed[longest + "@t"]?.kind == "write", "\(failed)")
        #expect(failed[longest + "@t"]?.message.contains("File name too long") == true, "\(failed)")
        #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")
    }
}
