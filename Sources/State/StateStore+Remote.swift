import Foundation
import GRDB
import Model

private typealias Blacklist = BlacklistEntry.Columns
private typealias Original = CachedOriginal.Columns

extension StateStore {
    // MARK: Blacklist (SDWebImage's failedURLs, persistent)

    // URLs go on the blacklist through `record` (`ItemEvent.blacklisted`), with their items.

    /// Removes URLs from the blacklist (all of them when `urls` is nil); returns those removed.
    @discardableResult
    public func unblock(_ urls: [String]?) throws -> Set<String> {
        try database.write { db in
            guard let urls else { return Set(try String.fetchAll(db, sql: "DELETE FROM blacklist RETURNING \(Blacklist.url)")) }
            let statement = try db.makeStatement(sql: "DELETE FROM blacklist WHERE \(Blacklist.url) = ? RETURNING \(Blacklist.url)")
            return Set(try urls.compactMap { try String.fetchOne(statement, arguments: [RemoteURL($0)?.normalized ?? $0]) })
        }
    }

    // MARK: Originals (downloaded sources)

    /// The least recently used originals to drop so the rest total at most `limit` bytes.
    package func originalsBeyond(_ limit: Int) throws -> [CachedOriginal] {
        try database.read { db in
            var total = try CachedOriginal.select(sum(Original.size), as: Int.self).fetchOne(db) ?? 0
            var dropped: [CachedOriginal] = []
            let originals = try CachedOriginal.order(Original.usedAt).fetchCursor(db)
            while total > limit, let oldest = try originals.next() {
                dropped.append(oldest)
                total -= oldest.size
            }
            return dropped
        }
    }

    /// Stores a downloaded original, replacing its row (which clears a failed revalidation's columns).
    package func saveOriginal(_ original: CachedOriginal) throws {
        try database.write { db in try original.insert(db, onConflict: .replace) }
    }

    /// Marks originals used now (the cache trims least recently used first).
    package func touchOriginals(_ sourceKeys: [String]) throws {
        try updateOriginals(sourceKeys, "UPDATE original SET \(Original.usedAt) = ? WHERE \(Original.sourceKey) = ?", [Date().timeIntervalSince1970])
    }

    /// Revalidating these cached originals failed transiently and they serve stale: why, and
    /// since the first such failure after their last successful revalidation.
    package func markNotRevalidated(_ sourceKeys: [String], reason: String) throws {
        try updateOriginals(sourceKeys, """
            UPDATE original SET \(Original.revalidationError) = ?,
                \(Original.revalidationFailedSince) = COALESCE(\(Original.revalidationFailedSince), ?)
            WHERE \(Original.sourceKey) = ?
            """, [reason, Date().timeIntervalSince1970])
    }

    /// `sql` run for each of `sourceKeys` in one transaction, with `arguments` then the key.
    private func updateOriginals(_ sourceKeys: [String], _ sql: String, _ arguments: StatementArguments) throws {
        guard !sourceKeys.isEmpty else { return }
        try database.write { db in
            let statement = try db.makeStatement(sql: sql)
            for key in sourceKeys { try statement.execute(arguments: arguments + [key]) }
        }
    }

    /// Cached originals serving stale since a revalidation failed, and the oldest such failure.
    public func notRevalidated() throws -> (count: Int, since: Date?) {
        try database.read { db in
            let row = try CachedOriginal.filter(Original.revalidationError != nil)
                .select(count(Original.sourceKey), min(Original.revalidationFailedSince)).asRequest(of: Row.self).fetchOne(db)
            return (row?[0] ?? 0, (row?[1] as Double?).map(Date.init(timeIntervalSince1970:)))
        }
    }

    package func forgetOriginal(_ sourceKey: String) throws {
        try database.write { db in try CachedOriginal.filter(Original.sourceKey == sourceKey).deleteAll(db) }
    }
}
