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
    // MARK: Blacklist (SDWebImage's failedURLs, persistent)

    // URLs go on the blacklist through `record` (`ItemEvent.blacklisted`), with their items.

    /// Removes URLs from the blacklist (all of them when `urls` is nil); returns those removed.
    @discardableResult
    public func unblock(_ urls: [String]?) throws -> Set<String> {
        try database.write { db in
            guard let urls else { return Set(try String.fetchAll(db, sql: "DELETE FROM blacklist RETURNING url")) }
            let statement = try db.makeStatement(sql: "DELETE FROM blacklist WHERE url = ? RETURNING url")
            return Set(try urls.compactMap { try String.fetchOne(statement, arguments: [RemoteURL($0)?.normalized ?? $0]) })
        }
    }

    // MARK: Originals (downloaded sources)

    /// The least recently used originals to drop so the rest total at most `limit` bytes.
    package func originalsBeyond(_ limit: Int) throws -> [CachedOriginal] {
        try database.read { db in
            var total = try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM original") ?? 0
            var dropped: [CachedOriginal] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM original ORDER BY used_at")
            while total > limit, let row = try rows.next() {
                let oldest = CachedOriginal(row: row)
                dropped.append(oldest)
                total -= oldest.size
            }
            return dropped
        }
    }

    package func saveOriginal(_ original: CachedOriginal) throws {
        try database.write { db in try Self.insertOriginal(original, into: db, replacing: true) }
    }

    static func insertOriginal(_ original: CachedOriginal, into db: Database, replacing: Bool) throws {
        try db.execute(sql: """
            INSERT OR \(replacing ? "REPLACE" : "IGNORE") INTO original
                (source_key, url, file, etag, last_modified, content_hash, size, fetched_at, validated_at, used_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [original.sourceKey, original.url, original.file, original.etag, original.lastModified,
                             original.contentHash, original.size, original.fetchedAt, original.validatedAt,
                             original.usedAt])
    }

    /// Marks originals used now (the cache trims least recently used first).
    package func touchOriginals(_ sourceKeys: [String]) throws {
        guard !sourceKeys.isEmpty else { return }
        try database.write { db in
            let statement = try db.makeStatement(sql: "UPDATE original SET used_at = ? WHERE source_key = ?")
            let now = Date().timeIntervalSince1970
            for key in sourceKeys { try statement.execute(arguments: [now, key]) }
        }
    }

    /// Revalidating these cached originals failed transiently and they serve stale: why, and
    /// since the first such failure after their last successful revalidation.
    package func markNotRevalidated(_ sourceKeys: [String], reason: String) throws {
        guard !sourceKeys.isEmpty else { return }
        try database.write { db in
            let statement = try db.makeStatement(sql: """
                UPDATE original SET revalidation_error = ?, revalidation_failed_since = COALESCE(revalidation_failed_since, ?)
                WHERE source_key = ?
                """)
            let now = Date().timeIntervalSince1970
            for key in sourceKeys { try statement.execute(arguments: [reason, now, key]) }
        }
    }

    /// Cached originals serving stale since a revalidation failed, and the oldest such failure.
    public func notRevalidated() throws -> (count: Int, since: Date?) {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), MIN(revalidation_failed_since) FROM original WHERE revalidation_error IS NOT NULL")
            return (row?[0] ?? 0, (row?[1] as Double?).map(Date.init(timeIntervalSince1970:)))
        }
    }

    package func forgetOriginal(_ sourceKey: String) throws {
        try database.write { db in try db.execute(sql: "DELETE FROM original WHERE source_key = ?", arguments: [sourceKey]) }
    }
}
