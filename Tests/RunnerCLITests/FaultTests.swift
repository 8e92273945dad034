import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs at `relative` in the workspace, or the test is skipped saying why it cannot be mounted.
func mountTmpfs(_ workspace: Workspace, _ relative: String, size: String) throws -> TmpfsMount {
    do {
        return try TmpfsMount(at: workspace.path(relative), size: size)
    } catch {
        try Test.cancel("skipped: \(error)")
    }
}

/// `count` sources in `in/` (hard links of one photograph, 1200 pixels wide), named `p00.jpg`, ….
func photoSources(_ workspace: Workspace, count: Int, photo: String = "photos/aitzgorri.jpg") throws {
    try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
    for index in 0..<count {
        try FileManager.default.linkItem(atPath: Fixtures.path(photo), toPath: workspace.path(String(format: "in/p%02d.jpg", index)))
    }
}

/// A job over `in/` with one output: `chain` encoded as `format`, written to `out/{stem}.EXT`.
@discardableResult
func oneOutputJob(_ workspace: Workspace, chain: String = #"[{"op": "thumbnail", "width": 150, "height": 150, "fit": "cover"}]"#,
                  format: String = #"{"type": "png", "compression": 0}"#, ext: String = "png",
                  state: String = "state/job.sqlite", extra: String = "") throws -> String {
    try workspace.writeJob("""
    {"version": 1, "name": "faults", "sources": [{"path": "in", "include": ["*"]}],
     "outputs": [{"name": "o", "path": "out/{stem}.\(ext)", "chain": \(chain), "format": \(format)}],
     "state": "\(state)"\(extra)}
    """)
}

/// Temporary files anywhere in the workspace (`.NAME.runner-tmp-PID-HOST`), mounts inside it included
/// (`Workspace.files` stays on one file system).
func temporaryFiles(_ workspace: Workspace) -> [String] {
    TreeSnapshot(workspace.root).entries.keys.filter { $0.contains(".runner-tmp-") }
        .map { String($0.dropFirst(workspace.root.count + 1)) }.sorted()
}

/// What a person finds after any run: the state database is intact, every item recorded done
/// has its whole output (libvips decodes all of it), no item recorded failed has one, and no
/// temporary file is left. Returns the items by state.
@discardableResult
func checkRecordsAgainstDisk(_ workspace: Workspace, state: String) throws -> [String: Int] {
    let database = try StateDatabase(path: workspace.path(state))
    #expect(try database.integrity() == "ok")
    let rows: [[String]] = try database.rows("SELECT key, state, output_path FROM item")
    var counts: [String: Int] = [:]
    for row in rows {
        let (key, itemState, output) = (row[0], row[1], row[2])
        counts[itemState, default: 0] += 1
        if itemState == "done" {
            #expect(ImageProbe.open(output) != nil, "\(key) is recorded done but \(output) is missing or partial")
        } else if itemState == "failed" {
            #expect(!FileManager.default.fileExists(atPath: output), "\(key) is recorded failed but \(output) exists")
        }
    }
    #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")
    return counts
}

/// A `twoOutputJob` of 30 sources run with JSON events, once both its workers are paused holding a
/// source of p010-p019 and the 20 items of p000-p009 are committed (reported: the recorder
/// commits in batches); `try pauses.releaseAll()` lets it go on.
func startSlowRun(_ workspace: Workspace) throws -> (job: String, run: RunningCommand, pauses: Pauses) {
    let job = try twoOutputJob(workspace, count: 30)
    let pauses = try Pauses("worker.task@in/p01", in: workspace)
    let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
    #expect(pauses.wait(for: "worker.task", count: 2, of: run).count == 2)
    #expect(run.waitUntil { itemEvents(run) >= 20 }, "\(run.stdoutSoFar.suffix(600))")
    return (job, run, pauses)
}

/// After whatever stopped it, the next run of a `twoOutputJob` of 30 sources exits 0 with every item
/// done and every output whole.
func nextRunFinishesSlowJob(_ workspace: Workspace, _ job: String) throws {
    let next = try workspace.run([job])
    #expect(next.status == 0, "\(next.stderr)")
    try verifyOutputs(workspace, expected: 30)
    #expect(try checkRecordsAgainstDisk(workspace, state: "state/two.sqlite") == ["done": 60])
}

/// `runner failed JOB --json`: each failed item's kind and message by source file name and output.
func failures(_ workspace: Workspace, _ job: String) throws -> [String: (kind: String, message: String)] {
    let result = try workspace.run(["failed", job, "--json"])
    let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
    let items = try #require(object["failed"] as? [[String: Any]])
    var found: [String: (kind: String, message: String)] = [:]
    for item in items {
        let name = ((item["source"] as? String ?? "") as NSString).lastPathComponent + "@" + (item["output"] as? String ?? "")
        found[name] = (item["kind"] as? String ?? "", item["message"] as? String ?? "")
    }
    return found
}

@Suite("When the disk or the file system fails", .serialized)
struct FaultTests {
    @Test("outputs on a full disk: write failures carry the system's message, nothing partial is left, and the run after space is freed finishes")
    func outputDiskFull() throws {
        let workspace = try Workspace()
        let out = try mountTmpfs(workspace, "out", size: "1m")
        defer { out.unmount() }
        try photoSources(workspace, count: 8)
        // Each output is an uncompressed 150x150 PNG of about 68 KB: room for two of them.
        let job = try oneOutputJob(workspace)
        out.fill(leaving: 200_000)
        let full = try workspace.run([job])
        #expect(full.status == 1, "\(full.stderr)")
        let counts = try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite")
        #expect(counts["done", default: 0] >= 1 && counts["failed", default: 0] >= 4, "\(counts)")
        let failed = try failures(workspace, job)
        #expect(failed.count == counts["failed"])
        for (item, failure) in failed {
            #expect(failure.kind == "write" && failure.message.contains("No space left on device"), "\(item): \(failure)")
        }
        #expect(workspace.files(in: "out").filter { $0.hasSuffix(".png") }.count == counts["done"])

        try FileManager.default.removeItem(atPath: out.path + "/filler")
        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(next.stdout.contains("\(failed.count) done, 0 failed, \(8 - failed.count) up to date"), "\(next.stdout)")
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["done": 8])
    }

    @Test("a read-only output folder fails every item as write with the system's message; once writable, the next run finishes")
    func readOnlyOutputFolder() throws {
        let workspace = try Workspace()
        let out = try mountTmpfs(workspace, "out", size: "2m")
        defer { out.unmount() }
        try photoSources(workspace, count: 3)
        let job = try oneOutputJob(workspace)
        do { try out.remount(readOnly: true) } catch { try Test.cancel("skipped: \(error)") }
        let refused = try workspace.run([job])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stdout.contains("0 done, 3 failed"), "\(refused.stdout)")
        for (item, failure) in try failures(workspace, job) {
            #expect(failure.kind == "write" && failure.message.contains("Read-only file system"), "\(item): \(failure)")
        }
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["failed": 3])

        try out.remount(readOnly: false)
        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["done": 3])
    }

    @Test("the output folder deleted again and again mid-run: no crash, no partial or temporary file, and the next run makes every missing output")
    func outputFolderDeletedMidRun() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 30)
        // Each soft output, once staged in its folder, waits while the test deletes the folder.
        let pauses = try Pauses("worker.staged@out/soft/", in: workspace)
        let run = try workspace.start([job, "--log-format", "json", "-j", "1"], environment: pauses.environment)
        var deletions = 0
        while let paused = pauses.wait(for: "worker.staged", of: run).first {
            try FileManager.default.removeItem(atPath: workspace.path("out/soft"))
            deletions += 1
            pauses.release(paused)
        }
        let result = run.wait()
        #expect(result.status == 1, "\(result.stderr)")
        #expect(deletions == 30, "the folder was deleted \(deletions) times")
        // Each soft item's rename met a missing folder and failed as write; none left a temporary file.
        let failed = try failures(workspace, job)
        #expect(failed.count == 30, "\(failed)")
        for (item, failure) in failed {
            #expect(item.hasSuffix("@soft") && failure.kind == "write", "\(item): \(failure)")
        }
        #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")

        try nextRunFinishesSlowJob(workspace, job)
    }

    @Test("an output path taken by a folder fails that item as write when it is published: not recorded done, no temporary file left")
    func outputPathIsAFolder() throws {
        let workspace = try Workspace()
        try photoSources(workspace, count: 3)
        try workspace.write("mine", to: "out/p01.png/keep.txt")
        let job = try oneOutputJob(workspace)
        let result = try workspace.run([job])
        #expect(result.status == 1, "\(result.stderr)")
        let failed = try failures(workspace, job)
        #expect(failed.count == 1 && failed["p01.jpg@o"]?.kind == "write", "\(failed)")
        #expect(failed["p01.jpg@o"]?.message.contains("cannot rename into \(workspace.path("out/p01.png"))") == true, "\(failed)")
        #expect(try String(contentsOfFile: workspace.path("out/p01.png/keep.txt"), encoding: .utf8) == "mine")
        let database = try StateDatabase(path: workspace.path("state/job.sqlite"))
        #expect(try database.states().values.sorted() == ["done", "done", "failed"])
        #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")
    }

    @Test("sources swapped after planning for a FIFO, a character device, a symlink to /dev/zero, nothing, or half a file: never blocks, fails only those items")
    func sourcesSwappedAfterPlanning() throws {
        let workspace = try Workspace()
        try photoSources(workspace, count: 16)
        let swapped = ["z-device.jpg", "z-fifo.jpg", "z-gone.jpg", "z-symlink.jpg", "z-truncated.jpg"]
        for name in swapped {
            try FileManager.default.copyItem(atPath: Fixtures.path("photos/aitzgorri.jpg"), toPath: workspace.path("in/" + name))
        }
        // The z- sources are planned as photographs; the one worker pauses on the first source while they change.
        let job = try oneOutputJob(workspace, format: #"{"type": "jpeg"}"#, ext: "jpg")
        let pauses = try Pauses("worker.task@in/p00.jpg", in: workspace)
        let run = try workspace.start([job, "--log-format", "json", "-j", "1"], environment: pauses.environment)
        let paused = try #require(pauses.wait(for: "worker.task", of: run).first, "\(run.stdoutSoFar) \(run.stderrSoFar)")
        let folder = workspace.path("in/")
        for name in swapped.dropLast() { unlink(folder + name) }
        #expect(mkfifo(folder + "z-fifo.jpg", 0o644) == 0)
        #expect(symlink("/dev/zero", folder + "z-symlink.jpg") == 0)
        #expect(try RunningCommand("/usr/bin/mknod", arguments: [folder + "z-device.jpg", "c", "1", "5"], directory: "/", environment: [:])
            .wait().status == 0, "mknod of /dev/zero's numbers")
        #expect(truncate(folder + "z-truncated.jpg", 20_000) == 0)
        #expect(itemEvents(run) == 0, "the swap came before the worker reached any source")
        pauses.release(paused)
        // A source that blocked its reader would hold the run until this bound kills it (status 137).
        let result = run.wait(timeout: 300)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(summaryEvent(result.stdout)?["done"] as? Int == 16, "\(result.stdout.suffix(400))")

        let failed = try failures(workspace, job)
        #expect(Set(failed.keys) == Set(swapped.map { $0 + "@o" }), "\(failed)")
        for name in ["z-device.jpg", "z-fifo.jpg", "z-symlink.jpg"] {
            #expect(failed[name + "@o"]?.kind == "unreadable", "\(name): \(String(describing: failed[name + "@o"]))")
            #expect(failed[name + "@o"]?.message.contains("not a regular file") == true, "\(name): \(String(describing: failed[name + "@o"]))")
        }
        #expect(failed["z-gone.jpg@o"]?.kind == "unreadable")
        #expect(failed["z-gone.jpg@o"]?.message.contains("No such file or directory") == true)
        #expect(failed["z-truncated.jpg@o"]?.kind == "decode")
        // libjpeg's "Premature end of JPEG file" (8.14), libvips' own "premature end of JPEG image" (8.16).
        #expect(failed["z-truncated.jpg@o"]?.message.lowercased().contains("premature end") == true, "\(String(describing: failed["z-truncated.jpg@o"]))")
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["done": 16, "failed": 5])
    }
}
