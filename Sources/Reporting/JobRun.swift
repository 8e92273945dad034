import Foundation
import State

/// A run of the job, or of one of its shards: run ids count per state database, so a sharded
/// job's runs are told apart by their shard. Encodes as the run's own fields plus `shard`.
public struct JobRun: Sendable, Encodable {
    public let run: RunRecord
    /// "3/16", or nil for the whole job's own database.
    public let shard: String?

    public func encode(to encoder: any Encoder) throws {
        try run.encode(to: encoder)
        try ["shard": shard].encode(to: encoder)
    }

    /// `run 4` or `run 1 of shard 3/16`, as `status` prints it.
    public var name: String { "run \(run.id)" + (shard.map { " of shard \($0)" } ?? "") }
}
