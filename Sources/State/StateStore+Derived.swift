import Foundation
import GRDB
import Model
import Planning

private typealias Source = StoredSource.Columns
private typealias Derived = StoredDerivedValue.Columns

extension StateStore {
    // MARK: Derived values

    /// Stores what a worker found a source to be and derived from it: the source's row (its content
    /// hash kept when the worker did not hash the same content again) and each value, replacing
    /// what was there. The one writer of `source` and `derived` rows.
    static func recordSource(_ facts: SourceFacts, derived: [SourceDerivation.Value], of sourceKey: String, location: String,
                             fingerprint: String, at now: Double, in db: Database) throws {
        // The location is NULL when it is the key (a file's path): stored once.
        try db.cachedStatement(sql: sourceSQL).execute(arguments: [sourceKey, location == sourceKey ? nil : location, fingerprint, facts.bytes,
                                                                    facts.width, facts.height, facts.format, facts.contentHash, now])
        for value in derived {
            try StoredDerivedValue(sourceKey: sourceKey, identifier: value.identifier, name: value.name, fingerprint: fingerprint,
                                   json: value.json).insert(db, onConflict: .replace)
        }
    }

    private static let sourceSQL = """
        INSERT INTO source (\(Source.key), \(Source.location), \(Source.fingerprint), \(Source.bytes), \(Source.width), \(Source.height),
                            \(Source.format), \(Source.contentHash), \(Source.updatedAt))
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
        ON CONFLICT(\(Source.key)) DO UPDATE SET \(Source.location) = ?2, \(Source.fingerprint) = ?3, \(Source.bytes) = ?4,
            \(Source.width) = ?5, \(Source.height) = ?6, \(Source.format) = ?7,
            \(Source.contentHash) = COALESCE(?8, CASE WHEN source.\(Source.fingerprint) = ?3 THEN source.\(Source.contentHash) END),
            \(Source.updatedAt) = ?9
        """

    /// The `source` row of each of `keys` that has one, with its derived values computed from its
    /// current content (maybe none); one read for a page of sources (the site manifest's).
    package func sourceRecords(of keys: [String]) throws -> [String: DerivedSourceRecord] {
        guard !keys.isEmpty else { return [:] }
        return try database.read { db in
            let sources = try StoredSource.filter(keys.contains(Source.key)).fetchAll(db)
            let values = Dictionary(grouping: try StoredDerivedValue.filter(keys.contains(Derived.sourceKey)).fetchAll(db), by: \.sourceKey)
            return Dictionary(uniqueKeysWithValues: sources.map { ($0.key, Self.current($0, values[$0.key] ?? [])) })
        }
    }

    /// Every source with derived values, in key order, one at a time (two cursors merged, so memory
    /// holds one source however many there are); `names` (`dhash`, ...) limits the values read.
    package func forEachDerivedSource(names: [String]? = nil, _ body: (DerivedSourceRecord) throws -> Void) throws {
        try database.read { db in
            let sources = try StoredSource.order(Source.key).fetchCursor(db)
            var request = StoredDerivedValue.order(Derived.sourceKey, Derived.identifier)
            if let names { request = request.filter(names.contains(Derived.name)) }
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
        try Self.derivedLedger(sourceKey, in: db) ?? takeOver { db in
            guard try db.tableExists(StoredDerivedValue.databaseTableName), let ledger = try Self.derivedLedger(sourceKey, in: db) else { return nil }
            let source = try Row.fetchAll(db, sql: "SELECT * FROM source WHERE \(Source.key) = ?", arguments: [sourceKey])
            let values = try Row.fetchAll(db, sql: "SELECT * FROM derived WHERE \(Derived.sourceKey) = ?", arguments: [sourceKey])
            return (ledger, source.map { (StoredSource.databaseTableName, $0) } + values.map { (StoredDerivedValue.databaseTableName, $0) })
        } ?? DerivedLedger()
    }

    private static let ledgerSQL = "SELECT \(Source.fingerprint), \(Source.contentHash) FROM source WHERE \(Source.key) = ?"
    private static let ledgerValuesSQL = "SELECT \(Derived.identifier), \(Derived.fingerprint) FROM derived WHERE \(Derived.sourceKey) = ?"

    private static func derivedLedger(_ sourceKey: String, in db: Database) throws -> DerivedLedger? {
        guard let source = try Row.fetchOne(db.cachedStatement(sql: ledgerSQL), arguments: [sourceKey]) else { return nil }
        var ledger = DerivedLedger(contentHash: source[1], contentHashFingerprint: source[0])
        try Row.fetchCursor(db.cachedStatement(sql: ledgerValuesSQL), arguments: [sourceKey]).forEach { ledger.values[$0[0]] = $0[1] }
        return ledger
    }
}
