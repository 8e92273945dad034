import Foundation
import Support

/// One of N independent parts of a job (`--shard K/N`), for running a job on many machines with
/// no coordinator: a source belongs to the shard its key hashes to, the same on every machine, in
/// every run and whatever the order of discovery, so a source and all of its outputs always belong
/// to one shard (one download and one decode still feed every chain).
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    public init?(index: Int, count: Int) {
        guard count >= 1, (0..<count).contains(index) else { return nil }
        (self.index, self.count) = (index, count)
    }

    /// "3/16".
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else { return nil }
        self.init(index: index, count: count)
    }

    public var description: String { "\(index)/\(count)" }

    /// The shard of `sourceKey` among `count`: FNV-1a of the key, then a 64-bit finalizer
    /// (splitmix64's) so every bit of the hash reaches the remainder.
    public static func index(of sourceKey: String, count: Int) -> Int {
        var bits = StableHash.value(sourceKey)
        bits = (bits ^ (bits >> 30)) &* 0xbf58_476d_1ce4_e5b9
        bits = (bits ^ (bits >> 27)) &* 0x94d0_49bb_1331_11eb
        bits ^= bits >> 31
        return Int(bits % UInt64(count))
    }

    public func contains(_ sourceKey: String) -> Bool { Self.index(of: sourceKey, count: count) == index }

    /// This shard's own file beside the job's `path`: `images.json` gives `images.shard-3-of-16.json`
    /// (its state database, its manifest part).
    public func partPath(of path: String) -> String {
        let (stem, ext) = Paths.splitExtension(Paths.lastComponent(path))
        return Paths.directory(of: path) + "/\(stem).shard-\(index)-of-\(count)" + (ext.isEmpty ? "" : ".\(ext)")
    }
}

extension Shard {
    /// Why a shard could not be worked out; a command-line error.
    public struct Unresolved: Error, CustomStringConvertible {
        public let description: String
    }

    /// The shard this process runs: `--shard K/N` wins; otherwise the batch engine's environment,
    /// so a job script needs no arithmetic. Kubernetes Indexed Jobs give `JOB_COMPLETION_INDEX`
    /// (the count from `--shards` or `RUNNER_SHARDS`); Slurm job arrays give `SLURM_ARRAY_TASK_ID`,
    /// with the count from `--shards`/`RUNNER_SHARDS` (IDs taken as they are), else from
    /// `SLURM_ARRAY_TASK_COUNT` with `SLURM_ARRAY_TASK_MIN` subtracted (arrays that start above 0).
    /// Nil: the whole job.
    public static func resolve(flag: String?, shards: Int?, environment: [String: String]) throws(Unresolved) -> Shard? {
        if let flag {
            guard let shard = Shard(flag) else {
                throw Unresolved(description: "--shard must be K/N with 0 <= K < N, not \(Quoted.value(flag))")
            }
            return shard
        }
        let count = shards ?? environment["RUNNER_SHARDS"].flatMap { Int($0) }
        if let text = environment["JOB_COMPLETION_INDEX"] {
            guard let count else {
                throw Unresolved(description: "JOB_COMPLETION_INDEX is set: give the shard count with --shards N or RUNNER_SHARDS")
            }
            return try checked(Int(text), count, "JOB_COMPLETION_INDEX=\(text)")
        }
        if let text = environment["SLURM_ARRAY_TASK_ID"] {
            // With the count given, task IDs are shard indices as they stand, so resubmitting
            // `--array=3` alone runs shard 3. Without it, the array is the layout: an array
            // 1-16 is 16 shards, its first task shard 0.
            if let count { return try checked(Int(text), count, "SLURM_ARRAY_TASK_ID=\(text)") }
            let first = environment["SLURM_ARRAY_TASK_MIN"].flatMap { Int($0) } ?? 0
            guard let arrayCount = environment["SLURM_ARRAY_TASK_COUNT"].flatMap({ Int($0) }) else {
                throw Unresolved(description: "SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT: give --shards N")
            }
            return try checked(Int(text).map { $0 - first }, arrayCount, "SLURM_ARRAY_TASK_ID=\(text) (SLURM_ARRAY_TASK_MIN=\(first))")
        }
        return nil
    }

    private static func checked(_ index: Int?, _ count: Int, _ origin: String) throws(Unresolved) -> Shard {
        guard let index, let shard = Shard(index: index, count: count) else {
            throw Unresolved(description: "\(origin) is not a shard of \(count) (0 to \(count - 1))")
        }
        return shard
    }
}
