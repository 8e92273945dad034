import Foundation
import GRDB
import Testing
import TestSupport

@Suite("State and output rooms")
struct StateAndOutputTests {
    @Test("every blacklist reason reads back as the one written; a spelling runner never writes is an error naming it")
    func blacklistReasons() throws {
        let workspace = try Workspace()
        let store = try StateStore(path: workspace.path("s.sqlite"))
        let (run, _) = try store.beginRun(vipsVersion: "test", limitsDigest: "test") { _ in PlanCounts() }
        let reasons: [BlacklistReason] = [.download(.httpStatus(404)), .download(.tooManyRedirects), .download(.forbiddenScheme),
                                          .download(.malformedURL), .download(.tooLarge), .download(.notAnImage),
                                          .image(.decode), .image(.tooLarge)]
        try store.record(reasons.enumerated().map { .blacklisted(url: "http://h/\($0.offset)", reason: $0.element, message: "") },
                         runID: run)
        func blocked() throws -> [BlacklistEntry] { try collect { try [store].forEachBlockedURL($0) } }
        let read = try blocked()
        #expect(read.map(\.kind) == reasons)
        #expect(read.map(\.httpStatus) == [404] + Array(repeating: nil, count: reasons.count - 1))
        #expect(Set(reasons.map(\.description)).count == reasons.count, "no two reasons share a spelling")
        // Blacklisted again: the latest reason and message, counted, since the first time.
        try store.record([.blacklisted(url: "http://h/0", reason: .download(.notAnImage), message: "again")], runID: run)
        let again = try #require(try blocked().first)
        #expect(again.kind == .download(.notAnImage) && again.httpStatus == nil && again.message == "again" && again.count == 2
                && again.firstSeen == read[0].firstSeen && again.lastSeen >= read[0].lastSeen, "\(again)")
        try DatabaseQueue(path: workspace.path("s.sqlite")).write { try $0.execute(sql: "UPDATE blacklist SET kind = 'gone-fishing' WHERE url = 'http://h/0'") }
        let error = #expect(throws: StateDatabaseError.self) { try blocked() }
        #expect(error?.kind == .unknownValue && error?.exitCode == 2 && error?.description.contains(#"blacklist.kind holds "gone-fishing""#) == true,
                "\(String(describing: error))")
        // Read with another database (a shard's), the error names the file the value is in.
        let other = try StateStore(path: workspace.path("t.sqlite"))
        let (otherRun, _) = try other.beginRun(vipsVersion: "test", limitsDigest: "test") { _ in PlanCounts() }
        try other.record([.blacklisted(url: "http://h/9", reason: .image(.decode), message: "")], runID: otherRun)
        let merged = #expect(throws: StateDatabaseError.self) { try collect { try [store, other].forEachBlockedURL($0) } }
        #expect(merged?.path == workspace.path("s.sqlite"), "\(String(describing: merged))")
    }

    @Test("the state store migrates, records batches and keeps the ledger of done items")
    func stateStore() throws {
        let workspace = try Workspace()
        try workspace.write("x", to: "a/1.jpg")
        try workspace.write("x", to: "a/2.jpg")
        let job = try Job.parse(text: """
            {"version": 1, "sources": [{"path": "a"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}
            """, filePath: workspace.path("job.json"))
        let plan = try Planner(job: job, vipsVersion: "test").expand()
        let store = try StateStore(path: workspace.path("state/s.sqlite"))
        let (run, counts) = try store.beginRun(vipsVersion: "test", limitsDigest: "test") { pass in
            for source in plan.sources { try pass.recordPlanned(source) }
            return plan.counts
        }
        #expect(counts.pending == 2)
        let (first, second) = (plan.items[0], plan.items[1])
        try store.record([.started(key: first.key, fingerprint: first.fingerprint),
                          .started(key: second.key, fingerprint: second.fingerprint),
                          .finished(key: first.key, outputPath: first.outputPath, outcome: .done(RenderedOutput(width: 1, height: 1, bytes: 1, temporary: "", warning: nil), seconds: 0.1)),
                          .finished(key: second.key, outputPath: second.outputPath,
                                    outcome: .failed(ItemFailure(.decode, "bad"), seconds: 0.1))], runID: run)
        #expect(try store.plan { try $0.recorded(first.key) }?.fingerprint == first.fingerprint)
        #expect(try store.plan { try $0.recorded(first.key) }?.failureKind == nil)
        // A decode failure is decided by the content: recorded, with the fingerprint it failed under.
        #expect(try store.plan { try $0.recorded(second.key) }?.failureKind == .decode)
        #expect(try store.plan { try $0.recorded(second.key) }?.fingerprint == second.fingerprint)
        #expect(try store.stateCounts() == [.done: 1, .failed: 1])
        #expect(try collect { try [store].forEachFailedItem($0) }.map(\.kind) == [.decode])
        #expect(try store.integrityCheck() == "ok")

        // Reopening runs no migration twice, and the file is in WAL mode.
        let reopened = try StateDatabase(path: workspace.path("state/s.sqlite"))
        let mode: String? = try reopened.scalar("PRAGMA journal_mode")
        #expect(mode == "wal")
        let migrations: Int? = try reopened.scalar("SELECT COUNT(*) FROM grdb_migrations")
        #expect(migrations == 16)
        _ = try StateStore(path: workspace.path("state/s.sqlite"))
        #expect(try reopened.scalar("SELECT COUNT(*) FROM grdb_migrations") == migrations)
    }

    @Test("a staged output appears under its final name only once published; stale temporaries of dead processes are removed, another machine's only once a day old")
    func atomicFile() throws {
        let workspace = try Workspace()
        let first = try AtomicFile.stage(Data("hello".utf8), for: workspace.path("out/deep/file.bin"), owner: getpid())
        let second = try AtomicFile.stage(Data("world".utf8), for: workspace.path("out/other/file.bin"), owner: getpid())
        let suffix = ".runner-tmp-\(getpid())-\(AtomicFile.hostTag)"
        #expect(workspace.files(in: "out") == ["deep/.file.bin\(suffix)", "other/.file.bin\(suffix)"])
        try FileManager.default.removeItem(atPath: workspace.path("out/other"))
        let results = AtomicFile.publish([first, second])
        #expect(results[0] == nil)
        #expect(results[1]?.kind == .write && results[1]?.message.contains("out/other/file.bin") == true, "\(results)")
        #expect(workspace.files(in: "out") == ["deep/file.bin"])
        #expect(try String(contentsOfFile: workspace.path("out/deep/file.bin"), encoding: .utf8) == "hello")

        // A dead process of this machine (named with it, or as before names carried it), a live one;
        // a shard on another machine sharing the folder, staging now and a day ago (its PID is not ours to ask about).
        try workspace.write("partial", to: "out/deep/.a.bin.runner-tmp-999999999-\(AtomicFile.hostTag)")
        try workspace.write("partial", to: "out/deep/.b.bin.runner-tmp-999999999")
        try workspace.write("in progress", to: "out/deep/.c.bin\(suffix)")
        try workspace.write("in progress elsewhere", to: "out/deep/.d.bin.runner-tmp-999999999-0a1b2c3d")
        try workspace.write("left elsewhere", to: "out/deep/.e.bin.runner-tmp-999999999-0a1b2c3d")
        let dayAgo = Date().addingTimeInterval(-AtomicFile.foreignTemporaryAge - 60)
        try FileManager.default.setAttributes([.modificationDate: dayAgo], ofItemAtPath: workspace.path("out/deep/.e.bin.runner-tmp-999999999-0a1b2c3d"))
        #expect(AtomicFile.removeStaleTemporaries(in: [workspace.path("out/deep")]) == 3)
        #expect(workspace.files(in: "out") == ["deep/.c.bin\(suffix)", "deep/.d.bin.runner-tmp-999999999-0a1b2c3d", "deep/file.bin"])
    }

    @Test("a streamed file is compared with the file there as it is written: the same bytes stage nothing; any other text (a change past the first buffers, shorter, longer) replaces it whole, by rename")
    func streamedComparison() throws {
        let workspace = try Workspace()
        let path = workspace.path("site/data.json")
        /// Writes `text` in pieces across the 64 KiB buffer (one larger than it); whether the file was replaced.
        func stream(_ text: String) throws -> Bool {
            let bytes = Array(text.utf8), file = AtomicFile.Streamed(path: path)
            var start = 0
            for size in [1, 1_000, 70_000, 150_000, Int.max] where start < bytes.count {
                let end = min(bytes.count, start + min(size, bytes.count))
                try file.write(String(decoding: bytes[start..<end], as: UTF8.self))
                start = end
            }
            return try file.commit()
        }
        func stamp(_ relative: String) throws -> [String] {
            let attributes = try FileManager.default.attributesOfItem(atPath: workspace.path(relative))
            return ["\(attributes[.systemFileNumber] ?? "")", "\((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"]
        }
        let text = (0..<30_000).map { "line \($0)\n" }.joined()  // 300 KB
        var written = text
        #expect(try stream(text), "no file there yet: written, its folder made")
        for next in [text, text.replacingOccurrences(of: "line 29999", with: "LINE 29999"), String(text.prefix(100_000)), text + "more\n", text] {
            // Far back, so that a rewrite or a temporary made and removed in the folder shows at once.
            for relative in ["site/data.json", "site"] {
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: workspace.path(relative))
            }
            let before = try ["site/data.json", "site"].map(stamp)
            #expect(try stream(next) == (next != written))
            let after = try ["site/data.json", "site"].map(stamp)
            if next == written {
                #expect(after == before, "the same bytes: file and folder untouched")
            } else {
                #expect(after[0][0] != before[0][0] && after[1] != before[1], "a new file renamed into place")
            }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == next)
            #expect(workspace.files(in: "site") == ["data.json"], "no temporary left")
            written = next
        }
    }

    @Test("a failed write names the path and leaves nothing behind")
    func failedWrite() throws {
        let workspace = try Workspace()
        try workspace.write("not a folder", to: "blocker")
        #expect(throws: ItemFailure.self) { try AtomicFile.stage(Data("x".utf8), for: workspace.path("blocker/file.bin"), owner: getpid()) }
        #expect(workspace.files(in: ".") == ["blocker"])
    }

    @Test("a note runner keeps beside a file (the state's ETag, the manifest's upload) reads back up to 4 KiB; a longer one is none of runner's and reads as none")
    func notesReadBack() throws {
        let workspace = try Workspace()
        try AtomicFile.write(Data(String(repeating: "e", count: 4 << 10).utf8), to: workspace.path("at.etag"))
        try AtomicFile.write(Data(String(repeating: "e", count: (4 << 10) + 1).utf8), to: workspace.path("over.etag"))
        #expect(AtomicFile.note(at: workspace.path("at.etag")) == String(repeating: "e", count: 4 << 10))
        #expect(AtomicFile.note(at: workspace.path("over.etag")) == nil)
        #expect(AtomicFile.note(at: workspace.path("missing.etag")) == nil)
    }

    @Test("a folder's identity is the same seen from another machine's NFS mount (its own device number), and changes with an entry added")
    func identityWithoutDevice() throws {
        let workspace = try Workspace()
        try workspace.write("a", to: "folder/a.txt")
        var info = stat()
        #expect(stat(workspace.path("folder"), &info) == 0)
        var elsewhere = info
        elsewhere.st_dev &+= 1
        #expect(FileIdentity(info) == FileIdentity(elsewhere), "a shard on another node reuses its plan")
        #expect(FileIdentity(info).description == FileIdentity(elsewhere).description)
        usleep(10_000)  // past the file system's timestamp tick, so the folder's times can change
        try workspace.write("b", to: "folder/b.txt")
        #expect(FileIdentity(path: workspace.path("folder")) != FileIdentity(info), "an added entry is seen")
    }

    @Test("stat folder by folder answers what stat of the whole path does, errors included, and closes what it held")
    func folderStatAnswersAsStat() throws {
        let workspace = try Workspace()
        for name in ["a/1.jpg", "a/2.jpg", "b/1.jpg", "b/2.jpg", "a/deep/3.jpg"] { try workspace.write(name, to: name) }
        #expect(symlink(workspace.path("b"), workspace.path("linked")) == 0)
        #expect(symlink(workspace.path("nowhere"), workspace.path("a/dangling.jpg")) == 0)
        let paths = ["a/1.jpg", "a/2.jpg", "a/missing.jpg", "a/1.jpg/x", "a/deep/3.jpg", "b/1.jpg", "a/2.jpg", "b/2.jpg",
                     "linked/1.jpg", "linked/2.jpg", "nowhere/1.jpg", "nowhere/2.jpg", "a/dangling.jpg", "a/", "a/deep/"]
            .map(workspace.path) + ["/", "/etc/hostname", "Package.swift", "no-such-file"]
        func answer(_ stat: (String, inout stat) -> Bool, _ path: String) -> String {
            var info = Glibc.stat()
            errno = 0
            return stat(path, &info) ? "\(info.st_ino) \(info.st_size) \(info.st_mode)" : "errno \(errno)"
        }
        let before = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        do {
            let stats = FolderStat(folders: 2)
            for round in 1...3 {
                for path in paths {
                    let expected = answer({ stat($0, &$1) == 0 }, path)
                    #expect(answer(stats.stat, path) == expected, "round \(round): \(path)")
                }
            }
            _ = (answer(stats.stat, workspace.path("a/1.jpg")), answer(stats.stat, workspace.path("a/2.jpg")))
            #expect(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count > before, "a folder held open")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count == before, "and closed with it")
        // Files added and removed in a folder it holds are seen.
        let stats = FolderStat()
        #expect(answer(stats.stat, workspace.path("a/1.jpg")) == answer(stats.stat, workspace.path("a/1.jpg")))
        try workspace.write("new", to: "a/new.jpg")
        #expect(answer(stats.stat, workspace.path("a/new.jpg")).hasSuffix(" 3 \(S_IFREG | 0o644)"))
        #expect(unlink(workspace.path("a/1.jpg")) == 0)
        #expect(answer(stats.stat, workspace.path("a/1.jpg")) == "errno \(ENOENT)")
    }
}
