import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Workers start while the run plans, and only as many as the work needs", .serialized)
struct WorkerStartTests {
    private func listJob(_ workspace: Workspace) throws -> String {
        try workspace.writeJob("""
        {"version": 1, "name": "listed",
         "sources": [{"list": "sources.txt"}],
         "outputs": [{"name": "t", "path": "out/{stem}.jpg",
                      "chain": [{"op": "thumbnail", "width": 64, "height": 64, "fit": "inside"}],
                      "format": {"type": "jpeg"}}],
         "concurrency": {"process": 2},
         "state": "state.sqlite"}
        """)
    }

    @Test("workers are running before planning ends: a list that is still being read already has its workers")
    func workersStartDuringPlanning() throws {
        let workspace = try Workspace()
        try photoSources(workspace, count: 4)
        let job = try listJob(workspace)
        // A first run, so the next one plans once (inside its transaction) rather than checking first.
        try workspace.write("in/p00.jpg\n", to: "sources.txt")
        #expect(try workspace.run([job]).status == 0)

        // The list becomes a pipe the test writes into: planning reads it line by line and waits.
        unlink(workspace.path("sources.txt"))
        #expect(mkfifo(workspace.path("sources.txt"), 0o644) == 0)
        let writer = open(workspace.path("sources.txt"), O_RDWR)  // a FIFO opened read-write does not block
        #expect(writer >= 0)
        _ = "in/p01.jpg\nin/p02.jpg\n".withCString { write(writer, $0, strlen($0)) }
        let run = try workspace.start([job])
        let started = run.waitUntil { childProcesses(of: run.pid).count == 2 }
        #expect(started, "two workers while the list is still open: \(childProcesses(of: run.pid))")
        _ = "in/p03.jpg\n".withCString { write(writer, $0, strlen($0)) }
        close(writer)
        let result = run.wait()
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("3 done"), "\(result.stdout)")
        #expect(workspace.files(in: "out").count == 4)
    }

    @Test("no worker for an up-to-date rerun or --download-only, one for one source, no more than concurrency.process")
    func workersOnlyAsNeeded() throws {
        let workspace = try Workspace()
        try photoSources(workspace, count: 3)
        let job = try listJob(workspace)
        func workersStarted(_ arguments: [String]) throws -> Int? {
            let result = try workspace.run([job, "--log-format", "json"] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            return summaryEvent(result.stdout)?["workersStarted"] as? Int
        }
        try workspace.write("in/p00.jpg\n", to: "sources.txt")
        #expect(try workersStarted([]) == 1)
        #expect(try workersStarted([]) == 0)
        try workspace.write("in/p00.jpg\nin/p01.jpg\nin/p02.jpg\n", to: "sources.txt")
        #expect(try workersStarted(["--download-only"]) == 0)
        #expect(try workersStarted([]) == 2)
        #expect(workspace.files(in: "out").count == 3)
    }
}
