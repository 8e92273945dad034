import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Imaging
import JobFile
import Planning

extension StateStore {
    /// One in-memory database holding the items, runs and blacklist of several state databases of
    /// the same job (its shards), for reports that read a job as one. Run ids are kept apart by
    /// shifting each database's ids by a billion.
    package static func merged(_ paths: [String]) throws -> StateStore {
        let store = try StateStore(inMemory: try DatabaseQueue())
        try store.database.queue.writeWithoutTransaction { db in
            for (index, path) in paths.enumerated() {
                let shift = Int64(index) * 1_000_000_000
                try db.execute(sql: "ATTACH DATABASE ? AS part", arguments: [path])
                try db.inTransaction {
                    let (id, runID) = (RunRecord.Columns.id, ItemRecord.Columns.runID)
                    let runColumns = try db.columns(in: "run").map(\.name).filter { $0 != id.name }.joined(separator: ", ")
                    try db.execute(sql: "INSERT INTO run (\(id), \(runColumns)) SELECT \(id) + ?, \(runColumns) FROM part.run", arguments: [shift])
                    let itemColumns = try db.columns(in: "item").map(\.name).filter { $0 != runID.name }.joined(separator: ", ")
                    try db.execute(sql: "INSERT OR IGNORE INTO item (\(runID), \(itemColumns)) SELECT \(runID) + ?, \(itemColumns) FROM part.item",
                                   arguments: [shift])
                    try db.execute(sql: "INSERT OR IGNORE INTO blacklist SELECT * FROM part.blacklist")
                    try db.execute(sql: "INSERT OR IGNORE INTO original SELECT * FROM part.original")
                    try mergeDerived(from: "part", in: db)
                    if !RunLock.isHeld(statePath: path) { try DeadRun.show(runsAfter: shift, in: db) }
                    return .commit
                }
                try db.execute(sql: "DETACH DATABASE part")
            }
        }
        return store
    }
}
