import Foundation
import TestSupport
import Testing

@Suite("Shards")
struct ShardTests {
    @Test("the shard of a key is fixed: the same on every machine and in every release")
    func stable() {
        // Pinned: changing the function would move finished work between shards of running jobs.
        #expect(Shard.index(of: "/srv/photos/a.jpg", count: 16) == 15)
        #expect(Shard.index(of: "https://img.example.com/photos/000001.jpg", count: 16) == 0)
        #expect(Shard.index(of: "photo-1", count: 16) == 8)
        #expect(Shard.index(of: "", count: 16) == 13)
        #expect(Shard.index(of: "/srv/photos/a.jpg", count: 7) == 6)
        #expect(Shard.index(of: "photo-1", count: 1) == 0)
    }

    @Test("100,000 keys over 16 shards: the largest shard is within 5% of the mean")
    func balanced() {
        var counts = [Int](repeating: 0, count: 16)
        for index in 0..<100_000 { counts[Shard.index(of: String(format: "/data/photos/%06d.jpg", index), count: 16)] += 1 }
        let mean = 100_000.0 / 16
        #expect(Double(counts.max()!) <= mean * 1.05, "\(counts)")
        #expect(Double(counts.min()!) >= mean * 0.95, "\(counts)")
    }

    @Test("the shard comes from --shard, else Kubernetes' or Slurm's environment; out of range is an error")
    func resolved() throws {
        #expect(try Shard.resolve(flag: "3/16", shards: nil, environment: ["JOB_COMPLETION_INDEX": "5"]) == Shard(index: 3, count: 16))
        #expect(try Shard.resolve(flag: nil, shards: nil, environment: ["JOB_COMPLETION_INDEX": "5", "RUNNER_SHARDS": "8"])
            == Shard(index: 5, count: 8))
        #expect(try Shard.resolve(flag: nil, shards: 6, environment: ["JOB_COMPLETION_INDEX": "5", "RUNNER_SHARDS": "8"])
            == Shard(index: 5, count: 6))
        #expect(try Shard.resolve(flag: nil, shards: nil,
                                  environment: ["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"])
            == Shard(index: 3, count: 4))
        // A resubmitted subset (`--array=3` of 16 shards): the count is given, the ID is the index.
        #expect(try Shard.resolve(flag: nil, shards: nil, environment: ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "3",
                                                                         "SLURM_ARRAY_TASK_COUNT": "1", "RUNNER_SHARDS": "16"])
            == Shard(index: 3, count: 16))
        #expect(try Shard.resolve(flag: nil, shards: nil, environment: [:]) == nil)
        #expect(throws: Shard.Unresolved.self) { try Shard.resolve(flag: "4/4", shards: nil, environment: [:]) }
        #expect(throws: Shard.Unresolved.self) { try Shard.resolve(flag: nil, shards: nil, environment: ["JOB_COMPLETION_INDEX": "1"]) }
        #expect(throws: Shard.Unresolved.self) {
            try Shard.resolve(flag: nil, shards: nil, environment: ["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"])
        }
    }

    @Test("each shard has its own state database beside the job's, found again under any shard count")
    func databases() throws {
        let shard = try #require(Shard(index: 3, count: 16))
        #expect(JobStateLayout.path(for: shard, jobStatePath: "/srv/jobs/state/thumbs.sqlite") == "/srv/jobs/state/thumbs.shard-3-of-16.sqlite")
        let folder = NSTemporaryDirectory() + "runner-shards-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["thumbs.sqlite", "thumbs.shard-10-of-16.sqlite", "thumbs.shard-2-of-16.sqlite", "thumbs.shard-0-of-2.sqlite",
                     "thumbs.shard-1-of-2.sqlite-wal", "other.shard-0-of-2.sqlite", "thumbs.shard-x-of-2.sqlite"] {
            try Data().write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        #expect(JobStateLayout(jobStatePath: folder + "/thumbs.sqlite").databases.map { ($0.path as NSString).lastPathComponent }
            == ["thumbs.sqlite", "thumbs.shard-0-of-2.sqlite", "thumbs.shard-2-of-16.sqlite", "thumbs.shard-10-of-16.sqlite"])
    }
}
