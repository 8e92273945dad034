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
        for index in 0..<24 {
            try FileManager.default.linkItem(atPath: Fixtures.path("photos/aitzgorri.jpg"),
                                             toPath: workspace.path("in/p\(index).jpg"))
        }
        // Each render takes a second or more even with libvips 8.16's Highway blur: enlarged to
        // 4000 pixels, then two wide blurs; 24 sources keep the run going well past the kill.
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "big", "path": "out/{stem}.jpg",
                          "chain": [{"op": "resize", "width": 4000, "enlarge": true}, {"op": "blur", "sigma": 30}, {"op": "blur", "sigma": 30}],
                          "format": {"type": "jpeg"}}],
             "concurrency": {"process": 2}, "state": "state.sqlite"}
            """)
        let run = try workspace.start([job, "--log-format", "json"])
        // Both workers are rendering (each with a second source queued) once planning is over.
        #expect(run.waitUntil { run.stdoutSoFar.contains("\"event\":\"plan\"") })
        var workers: [pid_t] = []
        #expect(run.waitUntil { workers = childProcesses(of: run.process.processIdentifier); return workers.count == 2 })
        usleep(300_000)
        run.signal(SIGKILL)
        let killed = Date()
        // Orphaned, a worker would finish the render it holds and the one queued behind it, and
        // stage both after the next run had already removed a dead run's temporary files.
        while workers.contains(where: processAlive) && Date().timeIntervalSince(killed) < 0.3 { usleep(5_000) }
        #expect(!workers.contains(where: processAlive), "workers \(workers.filter(processAlive)) outlived their supervisor")
        _ = run.wait()
        usleep(1_500_000)
        for file in workspace.files(in: "out") {
            let modified = try #require(workspace.modificationDate("out/" + file))
            #expect(modified.timeIntervalSince(killed) < 0.05, "\(file) was written after the supervisor died")
        }
        for pid in workers where processAlive(pid) { kill(pid, SIGKILL) }
    }
}
