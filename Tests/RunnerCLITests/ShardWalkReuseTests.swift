import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// Plan reuse for `path` folders and globs: the record stands while every folder the walks read is unchanged.
extension ShardPlanReuseTests {
    /// Copies of fixture photos at `names` (relative to the workspace; copies, so one can be
    /// rewritten) and a job over `sources`, then left alone past runner's racy window (2 s).
    func walkJob(_ workspace: Workspace, photos names: [String], sources: String) async throws -> String {
        try names.forEach { try copyPhoto(workspace, $0) }
        let job = try workspace.writeJob("""
        {"version": 1, "name": "walked", "sources": \(sources),
         "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg",
                      "chain": [{"op": "thumbnail", "width": 32, "height": 32, "fit": "inside"}], "format": {"type": "jpeg"}}],
         "state": "state/job.sqlite"}
        """)
        try await pastTheRacyWindow()
        return job
    }

    func copyPhoto(_ workspace: Workspace, _ name: String, from fixture: String = "photos/friends.jpg") throws {
        try FileManager.default.createDirectory(atPath: (workspace.path(name) as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Fixtures.path(fixture), toPath: workspace.path(name))
    }

    /// Waits out the racy window, then runs both shards, which plan nothing new and record their walks.
    func settle(_ workspace: Workspace, _ job: String) async throws {
        try await pastTheRacyWindow()
        #expect(try runShards(workspace, job).done == 0)
        for index in 0..<2 { #expect(try plan(workspace, job, shard: index)["reusedSources"] as? Bool == true, "shard \(index)/2") }
    }

    func reused(_ workspace: Workspace, _ job: String) throws -> [Bool] {
        try (0..<2).map { try plan(workspace, job, shard: $0)["reusedSources"] as? Bool ?? false }
    }

    @Test("a glob's walk is reused while no folder it read changed; an added, removed or renamed file or a new subfolder is found")
    func globChanges() async throws {
        let workspace = try Workspace()
        let job = try await walkJob(workspace, photos: ["in/5.jpg", "in/a/1.jpg", "in/a/deep/er/2.jpg", "in/b/3.jpg", "in/b/4.jpg"],
                              sources: #"[{"glob": "in/**/*.jpg"}]"#)
        let fresh = try listing(workspace, job)
        #expect(try runShards(workspace, job).done == 5)
        #expect(try reused(workspace, job) == [true, true])
        #expect(try listing(workspace, job) == fresh, "rebuilt from the record: the same sources, keys and output paths in order")

        try copyPhoto(workspace, "in/a/deep/er/6.jpg")
        #expect(try runShards(workspace, job).done == 1, "a file added to a deep folder is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/a/deep/er/6.jpg")))

        try await settle(workspace, job)
        try FileManager.default.removeItem(atPath: workspace.path("in/b/3.jpg"))
        try FileManager.default.moveItem(atPath: workspace.path("in/b/4.jpg"), toPath: workspace.path("in/b/4b.jpg"))
        #expect(try runShards(workspace, job).done == 1, "the renamed file is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/b/4b.jpg")))
        let listed = try listing(workspace, job).joined().joined(separator: "\n")
        #expect(!listed.contains("in/b/3.jpg") && !listed.contains("in/b/4.jpg"), "removed and renamed files are gone: \(listed)")

        try await settle(workspace, job)
        try copyPhoto(workspace, "in/a/deep/new/7.jpg")
        #expect(try runShards(workspace, job).done == 1, "a file in a new subfolder is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/a/deep/new/7.jpg")))
    }

    @Test("a folder changed less than 2 s before a plan is not trusted: the next plan walks again")
    func racyFolder() async throws {
        let workspace = try Workspace()
        let job = try await walkJob(workspace, photos: ["in/a/1.jpg", "in/b/2.jpg", "in/b/3.jpg"], sources: #"[{"path": "in", "recursive": true}]"#)
        #expect(try runShards(workspace, job).done == 3)
        #expect(try reused(workspace, job) == [true, true])
        try copyPhoto(workspace, "in/b/4.jpg")
        // in/b's modification time an hour ahead: within the window however late the run starts on a
        // loaded machine. Shard 0 finds the file, but records nothing.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(3600)], ofItemAtPath: workspace.path("in/b"))
        let first = try workspace.run([job, "--shard", "0/2"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try plan(workspace, job, shard: 0)["reusedSources"] as? Bool == false)
        // Back in the past (its change time is now): settled 2 s later.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-60)], ofItemAtPath: workspace.path("in/b"))
        try await pastTheRacyWindow()
        _ = try runShards(workspace, job)
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/b/4.jpg")))
        #expect(try reused(workspace, job) == [true, true], "recorded once the folder had settled")
    }

    @Test("a rewritten image in an unchanged folder is rendered again from the reused plan")
    func changedImage() async throws {
        let workspace = try Workspace()
        let job = try await walkJob(workspace, photos: ["in/a/1.jpg", "in/a/2.jpg", "in/b/3.jpg"], sources: #"[{"glob": "in/*/*.jpg"}]"#)
        #expect(try runShards(workspace, job).done == 3)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("photos/fig-bowl.jpg")))
        let file = try #require(fopen(workspace.path("in/a/1.jpg"), "w"), "rewritten in place: in/a keeps its identity")
        #expect(bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) } == bytes.count && fclose(file) == 0)
        #expect(try reused(workspace, job) == [true, true])
        #expect(try runShards(workspace, job).done == 1)
    }

    @Test("a glob skipping a folder records the folder it chose from; a folder's subfolders and a retargeted symlink are found")
    func skippedFoldersAndSymlinks() async throws {
        let workspace = try Workspace()
        #expect(symlink(workspace.path("targets/one"), workspace.path("link")) == 0)
        let job = try await walkJob(workspace, photos: ["lib/p1.jpg", "lib/sub/p2.jpg", "shots/d1a/s1.jpg", "shots/e1/s2.jpg",
                                                        "targets/one/l1.jpg", "targets/two/l2.jpg"],
                                    sources: #"[{"path": "lib", "recursive": true}, {"glob": "shots/d1*/*.jpg"}, {"glob": "link/*.jpg"}]"#)
        #expect(try runShards(workspace, job).done == 4)
        #expect(try reused(workspace, job) == [true, true])

        try copyPhoto(workspace, "shots/e1/s3.jpg")
        #expect(try reused(workspace, job) == [true, true], "shots/e1 is not read: a file there changes nothing")
        try copyPhoto(workspace, "shots/d1b/s4.jpg")
        #expect(try runShards(workspace, job).done == 1, "a new folder the glob matches is found through its parent")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/d1b/s4.jpg")))

        try await settle(workspace, job)
        try copyPhoto(workspace, "lib/sub/p3.jpg")
        #expect(try runShards(workspace, job).done == 1, "a file in a path's subfolder is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/sub/p3.jpg")))

        try await settle(workspace, job)
        // Retargeted as `ln -sfn` does it: a new link renamed over the old one.
        #expect(symlink(workspace.path("targets/two"), workspace.path("link.new")) == 0)
        #expect(rename(workspace.path("link.new"), workspace.path("link")) == 0)
        #expect(try runShards(workspace, job).done == 1, "the link's new target's file is planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/l2.jpg")))
        #expect(!(try listing(workspace, job).joined().joined().contains("l1.jpg")))
    }

    @Test("a dangling symlink in a walked folder is recorded: once its target is a folder, its files are found")
    func danglingSymlink() async throws {
        let workspace = try Workspace()
        // A link to a disk not mounted yet: no target, so the walk takes it for a file (not an image).
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        #expect(symlink(workspace.path("archive"), workspace.path("in/archive")) == 0)
        let job = try await walkJob(workspace, photos: ["in/1.jpg", "in/a/2.jpg"], sources: #"[{"path": "in", "recursive": true}]"#)
        #expect(try runShards(workspace, job).done == 2)
        #expect(try reused(workspace, job) == [true, true])
        try ["archive/3.jpg", "archive/4.jpg", "archive/5.jpg"].forEach { try copyPhoto(workspace, $0) }
        #expect(try runShards(workspace, job).done == 3, "the files behind the link are planned")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/archive/5.jpg")))
    }

    @Test("a glob's folder that was not there and now cannot be listed is refused as a walk refuses it, not taken for still absent")
    func absentThenUnlistable() async throws {
        let workspace = try Workspace()
        let job = try await walkJob(workspace, photos: ["lib/1.jpg", "lib/2.jpg"], sources: #"[{"glob": "gate/in/*.jpg"}, {"path": "lib"}]"#)
        #expect(try runShards(workspace, job).done == 2)
        #expect(try reused(workspace, job) == [true, true])
        // `stat` of gate/in now fails, but not as "no such file" (as root, a symlink loop; as another
        // user, a folder it may not enter): whatever is there may hold images.
        #expect(symlink("gate", workspace.path("gate")) == 0)
        for index in 0..<2 {
            let result = try workspace.run([job, "--shard", "\(index)/2"])
            #expect(result.status == 2 && result.stderr.contains("sources[0].glob"), "shard \(index)/2: \(result.stderr)")
        }
    }
}
