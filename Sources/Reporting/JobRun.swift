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

extension JobDatabases {
    /// The latest `limit` runs of every database, newest first by start time (ids count per database).
    package func runsInTimeOrder(limit: Int) -> [JobRun] {
        let all = parts.flatMap { part in part.runs.map { JobRun(run: $0, shard: part.shard) } }
        return Array(all.sorted { ($0.run.startedAt, $0.run.id) > ($1.run.startedAt, $1.run.id) }.prefix(limit))
    }
}
