import Foundation
import GRDB
import Support

/// The shards of the layout that answers for a job (`JobStateLayout.current`) read as one: figures
/// summed, listings merged from a cursor per database, all open at once (SQLite's ATTACH stops at 10),
/// so memory holds a row per database. A key in two databases is read twice, the earlier's first.
extension [StateStore] {
    /// Runs `body` with a read transaction open in every store at once (one nested in the next).
    func reading<T>(_ open: [Database] = [], _ body: ([Database]) throws -> T) throws -> T {
        guard open.count < count else { return try body(open) }
        return try self[open.count].database.read { db in try reading(open + [db], body) }
    }

    /// The first `limit` (-1: all) records `request` reads in each store, made `R` by `make` (nil:
    /// none), merged in `precedes` order, which `request` must give already (its `ORDER BY`; it
    /// reads `limit` too, so SQLite's sort keeps no more).
    func forEachMerged<Record: FetchableRecord, R>(_ request: QueryInterfaceRequest<Record>, limit: Int = -1, as make: @escaping (Record) -> R?,
                                                   precedes: @escaping (R, R) -> Bool, _ body: (R) throws -> Void) throws {
        try reading { dbs in
            var merge = try OrderedMerge(zip(self, dbs).map { store, db in
                let records = try store.database.named { try request.limit(limit).fetchCursor(db).compactMap(make) }
                return { try store.database.named { try records.next() } }
            }, precedes: precedes)
            var given = 0
            while given != limit, let (record, _) = try merge.next() {
                try body(record)
                given += 1
            }
        }
    }

    /// The `source` row of each of `keys` that one of the stores has, with its derived values (the
    /// first store's that has the row).
    package func sourceRecords(of keys: [String]) throws -> [String: DerivedSourceRecord] {
        var found: [String: DerivedSourceRecord] = [:]
        for store in self where found.count < keys.count {
            found.merge(try store.sourceRecords(of: keys.filter { found[$0] == nil })) { first, _ in first }
        }
        return found
    }

    /// Shares 16 MB of SQLite's page cache out among the stores (each at most its default 2 MB), for
    /// reading them all at once. (A sort, such as the contact sheet's order, holds up to about 1.3 MB
    /// more in each: SQLite's least before it spills to a temporary file.)
    package func shareCache() throws {
        guard count > 1 else { return }
        for store in self { try store.database.queue.inDatabase { try $0.execute(sql: "PRAGMA cache_size = -\(Swift.min(2000, 16 * 1024 / count))") } }
    }

    /// The sum of `request`'s count in every store.
    func counted(_ request: some FetchRequest) throws -> Int {
        try reduce(0) { total, store in try total + store.database.read { try request.fetchCount($0) } }
    }
}

/// What a `forEach` gives, as an array.
package func collect<R>(_ forEach: ((R) throws -> Void) throws -> Void) rethrows -> [R] {
    var all: [R] = []
    try forEach { all.append($0) }
    return all
}
