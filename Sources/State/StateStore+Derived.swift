import Foundation
import GRDB
import Support
import Model
import Planning

extension StateStore {
    // MARK: Derived values

    /// Stores what a worker found a source to be and derived from it: the source's row (its content
    /// hash kept when the worker did not hash the same content again) and each value, replacing
    /// what was there. The one writer of `source` and `derived` rows.
    static func recordSource(_ facts: SourceFacts, derived: [SourceDerivation.Value], of sourceKey: String, location: String,
                             fingerprint: String, at now: Double, in db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            INSERT INTO source (key, location, fingerprint, bytes, width, height, format, content_hash, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            ON CONFLICT(key) DO UPDATE SET location = ?2, fingerprint = ?3, bytes = ?4, width = ?5, height = ?6, format = ?7,
                content_hash = COALESCE(?8, CASE WHEN source.fingerprint = ?3 THEN source.content_hash END), updated_at = ?9
            """)
        try statement.execute(arguments: [sourceKey, StoredSource.storedLocation(location, key: sourceKey), fingerprint, facts.bytes, facts.width, facts.height,
                                          facts.format, facts.contentHash, now])
        for value in derived {
            try StoredDerivedValue(sourceKey: sourceKey, identifier: value.identifier, name: value.name, fingerprint: fingerprint,
                                   json: value.json).insert(db, onConflict: .replace)
        }
    }

    /// The `source` row of each of `keys` that has one, with its derived values computed from its
    /// current content (maybe none); one read for a page of sources (the site manifest's).
    package func sourceRecords(of keys: [String]) throws -> [String: DerivedSourceRecord] {
        guard !keys.isEmpty else { return [:] }
        return try database.read { db in
            let sources = try StoredSource.filter(keys.contains(SourceTable.key)).fetchAll(db)
            let values = Dictionary(grouping: try StoredDerivedValue.filter(keys.contains(DerivedTable.sourceKey)).fetchAll(db), by: \.sourceKey)
            return Dictionary(uniqueKeysWithValues: sources.map { ($0.key, Self.current($0, values[$0.key] ?? [])) })
        }
    }

    /// Every source with derived values, in key order, one at a time (two cursors merged, so memory
    /// holds one source however many there are); `names` (`dhash`, ...) limits the values read.
    package func forEachDerivedSource(names: [String]? = nil, _ body: (DerivedSourceRecord) throws -> Void) throws {
        try database.read { db in
            let sources = try StoredSource.order(SourceTable.key).fetchCursor(db)
            var request = StoredDerivedValue.order(DerivedTable.sourceKey, DerivedTable.identifier)
            if let names { request = request.filter(names.contains(DerivedTable.name)) }
            let values = try request.fetchCursor(db)
            var next = try values.next()
            while let source = try sources.next() {
                var own: [StoredDerivedValue] = []
                // Both are in SQLite's order (bytes); values of a source with no row are skipped.
                while let value = next, !source.key.utf8.lexicographicallyPrecedes(value.sourceKey.utf8) {
                    if value.sourceKey == source.key { own.append(value) }
                    next = try values.next()
                }
                let record = Self.current(source, own)
                if !record.values.isEmpty { try body(record) }
            }
        }
    }

    private static func current(_ source: StoredSource, _ values: [StoredDerivedValue]) -> DerivedSourceRecord {
        DerivedSourceRecord(source: source, values: Dictionary(values.filter { $0.fingerprint == source.fingerprint }.map { ($0.identifier, $0) },
                                                               uniquingKeysWith: { first, _ in first }))
    }
}

extension StateStore.PlanningPass {
    package func derivedLedger(_ sourceKey: String) throws -> DerivedLedger {
        if let ledger = try Self.derivedLedger(sourceKey, in: db) { return ledger }
        for other in others {
            let found = try other.read { db -> (DerivedLedger, [Row])? in
                guard try db.tableExists("derived"), let ledger = try Self.derivedLedger(sourceKey, in: db) else { return nil }
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM source WHERE key = ?", arguments: [sourceKey])
                return (ledger, rows + (try Row.fetchAll(db, sql: "SELECT * FROM derived WHERE source_key = ?", arguments: [sourceKey])))
            }
            guard let (ledger, rows) = found else { continue }
            // Taken over like items, so this database alone answers for its sources from now on.
            if runID != nil {
                for row in rows { try Self.copy(row, into: row.hasColumn("location") ? "source" : "derived", in: db) }
            }
            return ledger
        }
        return DerivedLedger()
    }

    private static func derivedLedger(_ sourceKey: String, in db: Database) throws -> DerivedLedger? {
        guard let source = try Row.fetchOne(db.cachedStatement(sql: "SELECT fingerprint, content_hash FROM source WHERE key = ?"),
                                            arguments: [sourceKey]) else { return nil }
        var ledger = DerivedLedger(contentHash: source[1], contentHashFingerprint: source[0])
        let values = try Row.fetchCursor(db.cachedStatement(sql: "SELECT identifier, fingerprint FROM derived WHERE source_key = ?"),
                                         arguments: [sourceKey])
        while let row = try values.next() { ledger.values[row[0]] = row[1] }
        return ledger
    }
}
