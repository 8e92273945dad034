import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Processes whose parent is `pid` (from /proc, so it works for any process).
func childProcesses(of pid: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> pid_t? in
        guard let child = pid_t(entry),
              let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.range(of: ")", options: .backwards) else { return nil }
        let fields = stat[close.upperBound...].split(separator: " ")
        return fields.count > 1 && pid_t(fields[1]) == pid ? child : nil
    }
}

/// True while `pid` exists and is not a zombie.
func processAlive(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.range(of: ")", options: .backwards) else { return false }
    return stat[close.upperBound...].split(separator: " ").first != "Z"
}

@Suite("When the supervisor dies", .serialized)
struct SupervisorDeathTests {
    @Test("SIGKILL of the supervisor takes its workers with it: nothing is written after it died")
    func workersDieWithTheSupervisor() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        for index in 0..<8 {
            try FileManager.default.linkItem(atPath: Fixtures.path("photos/aitzgorri.jpg"),
                                             toPath: workspace.path("in/p\(index).jpg"))
        }
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "small", "path": "out/{stem}.jpg",
                          "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}}],
             "concurrency": {"process": 2}, "state": "state.sqlite"}
            """)
        // Both workers stop before rendering a source, each holding it (and one queued behind it).
        let pauses = try Pauses("worker.task", in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        let workers = pauses.wait(for: "worker.task", count: 2, of: run).map(\.pid)
        try #require(workers.count == 2, "\(run.stdoutSoFar) \(run.stderrSoFar)")
        run.signal(SIGKILL)
        let killed = Date()
        _ = run.wait()
        // Orphaned, a worker would go on (it is let go below), render what it holds and stage it
        // after the next run had already removed a dead run's temporary files.
        #expect(eventually { !workers.contains(where: processAlive) }, "workers \(workers.filter(processAlive)) outlived their supervisor")
        try pauses.releaseAll()
        for pid in workers where processAlive(pid) {
            // Only a failed expectation gets here: let it show what a survivor writes, then end it.
            usleep(500_000)
            kill(pid, SIGKILL)
        }
        for file in workspace.files(in: "out") {
            let modified = try #require(workspace.modificationDate("out/" + file))
            #expect(modified < killed, "\(file) was written after the supervisor died")
        }
    }
}
