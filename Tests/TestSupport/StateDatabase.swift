import Foundation
import GRDB

/// Reads a job's state database with plain SQL, independently of runner's `StateStore`.
public struct StateDatabase {
    private var queue: DatabaseQueue

    /// Read-only. A state whose writer was killed holds a WAL that a read-only connection cannot
    /// recover (SQLITE_READONLY_RECOVERY): it is then read from a copy, so the test never changes
    /// what the next run finds.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.readonly = true
        queue = try DatabaseQueue(path: path, configuration: configuration)
        do {
            _ = try queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM sqlite_master") }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_READONLY_RECOVERY {
            let copy = NSTemporaryDirectory() + "runner-state-\(UUID().uuidString).sqlite"
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + suffix)
            }
            queue = try DatabaseQueue(path: copy)
        }
    }

    /// Runs `sql` on the state at `path` as a test's edit (moving recorded times into the past).
    public static func write(_ path: String, _ sql: String) throws {
        try DatabaseQueue(path: path).write { try $0.execute(sql: sql) }
    }

    public func integrity() throws -> String {
        try queue.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") ?? "" }
    }

    /// Item state by key.
    public func states() throws -> [String: String] {
        try queue.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT key, state FROM item").map { ($0[0], $0[1]) })
        }
    }

    public func count(state: String) throws -> Int {
        try queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item WHERE state = ?", arguments: [state]) ?? 0 }
    }

    /// Every row `sql` returns, each value as text (`NULL` as an empty string).
    public func rows(_ sql: String, _ arguments: StatementArguments = []) throws -> [[String]] {
        try queue.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                row.databaseValues.map { value in value.isNull ? "" : String.fromDatabaseValue(value) ?? value.description }
            }
        }
    }

    public func scalar<T: DatabaseValueConvertible>(_ sql: String, _ arguments: StatementArguments = []) throws -> T? {
        try queue.read { try T.fetchOne($0, sql: sql, arguments: arguments) }
    }
}
