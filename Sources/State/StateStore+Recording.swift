import Foundation
import GRDB
import Support
import Model
import Planning

private typealias Item = ItemRecord.Columns
private typealias Run = RunRecord.Columns

extension StateStore {
    // MARK: Runs

    /// Starts a run: `body` plans it with lookups and `recordPlanned`, all in one transaction, so
    /// a job-file error found halfway leaves no trace. Returns the run's id and what `body` returned.
    package func beginRun(vipsVersion: String, limitsDigest: String,
                  _ body: (PlanningPass) throws -> PlanCounts) throws -> (Int64, PlanCounts) {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO run (\(Run.startedAt), \(Run.pid), \(Run.runnerVersion), \(Run.vipsVersion), \(Run.limits)) VALUES (?, ?, ?, ?, ?)
                """, arguments: [Date().timeIntervalSince1970, Int(getpid()), RunnerVersion.string, vipsVersion, limitsDigest])
            let runID = db.lastInsertedRowID
            let counts = try body(PlanningPass(db: db, runID: runID, others: others, limits: limitsDigest))
            try RunRecord.filter(Run.id == runID).updateAll(db, Run.planned.set(to: counts.pending), Run.upToDate.set(to: counts.upToDate),
                                                            Run.blocked.set(to: counts.blocked))
            return (runID, counts)
        }
    }

    /// Closes the runs a killed process left `running`; only call it holding the job's `RunLock`,
    /// which proves that no run is alive. Each ends as `DeadRun` says, at its last commit (its
    /// items' latest update, else its start), with the done and failed items it recorded.
    package func closeAbandonedRuns() throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE run SET \(Run.outcome) = \(DeadRun.outcome.sql), \(Run.endedAt) = COALESCE(last.at, run.\(Run.startedAt)),
                    \(Run.done) = last.done, \(Run.failed) = last.failed
                FROM (SELECT dead.\(Run.id), MAX(item.\(Item.updatedAt)) AS at,
                             COUNT(CASE item.\(Item.state) WHEN \(ItemState.done.sql) THEN 1 END) AS done,
                             COUNT(CASE item.\(Item.state) WHEN \(ItemState.failed.sql) THEN 1 END) AS failed
                      FROM run AS dead LEFT JOIN item ON item.\(Item.runID) = dead.\(Run.id)
                      WHERE dead.\(Run.outcome) = \(RunOutcome.running.sql) GROUP BY dead.\(Run.id)) AS last
                WHERE run.\(Run.id) = last.\(Run.id)
                """)
            try DeadRun.releaseItems(in: db)
        }
    }

    package func finishRun(_ runID: Int64, summary: RunSummary) throws {
        try database.write { db in
            try RunRecord.filter(Run.id == runID).updateAll(
                db, Run.endedAt.set(to: Date().timeIntervalSince1970), Run.done.set(to: summary.done), Run.failed.set(to: summary.failed),
                Run.upToDate.set(to: summary.upToDate), Run.notRevalidated.set(to: summary.notRevalidated),
                Run.blocked.set(to: summary.blocked), Run.skipped.set(to: summary.skipped), Run.outcome.set(to: summary.outcome), Run.exitCode.set(to: summary.exitCode))
            // Items abandoned in flight (a second signal killed their workers) run again next time.
            try DeadRun.releaseItems(in: db)
        }
    }

    // MARK: Recording

    private static let startedSQL = """
        UPDATE item SET \(Item.state) = \(ItemState.running.sql),
            \(Item.attempts) = CASE WHEN \(Item.fingerprint) = ?1 THEN \(Item.attempts) + 1 ELSE 1 END,
            \(Item.fingerprint) = ?1, \(Item.runID) = ?2, \(Item.updatedAt) = ?3
        WHERE \(Item.key) = ?4
        """
    /// A skipped item stays skipped, with its message.
    private static let unchangedSQL = """
        UPDATE item SET \(Item.state) = CASE \(Item.state) WHEN \(ItemState.skipped.sql) THEN \(Item.state) ELSE \(ItemState.done.sql) END,
            \(Item.fingerprint) = ?, \(Item.outputPath) = ?, \(Item.errorKind) = NULL,
            \(Item.errorMessage) = CASE \(Item.state) WHEN \(ItemState.skipped.sql) THEN \(Item.errorMessage) END, \(Item.runID) = ?, \(Item.updatedAt) = ?
        WHERE \(Item.key) = ?
        """
    /// A failure no worker started (a download, a vanished file) is a try too; `started` counted the others.
    private static let finishedSQL = """
        UPDATE item SET \(Item.attempts) = \(Item.attempts) + (\(Item.state) <> \(ItemState.running.sql) AND ?1 = \(ItemState.failed.sql)),
            \(Item.failedSince) = CASE WHEN ?1 = \(ItemState.failed.sql) THEN COALESCE(\(Item.failedSince), ?8) END,
            \(Item.state) = ?1, \(Item.outputPath) = ?2, \(Item.errorKind) = ?3, \(Item.errorMessage) = ?4, \(Item.warning) = ?5,
            \(Item.duration) = ?6, \(Item.runID) = ?7, \(Item.updatedAt) = ?8,
            \(Item.width) = ?10, \(Item.height) = ?11, \(Item.bytes) = ?12, \(Item.mediaType) = ?13, \(Item.contentHash) = ?14,
            \(Item.quality) = ?15, \(Item.qualityScore) = ?16, \(Item.qualityTarget) = ?17, \(Item.qualityEncodes) = ?18,
            \(Item.qualityCapped) = ?19, \(Item.qualityUnscorable) = ?20, \(Item.qualityDefaultBytes) = ?21
        WHERE \(Item.key) = ?9
        """

    /// The file an item was last recorded done at (its facts stay through a later start, and only a
    /// done item has them), when this event names another (a `{hash}` output's new bytes, a moved
    /// output, a failure's planned path) or none (skipped): retired with the record that replaces
    /// it, so no file is ever left that no row names.
    private static let retireSQL = """
        INSERT INTO retired (path, item_key, retired_at)
        SELECT \(Item.outputPath), \(Item.key), ?1 FROM item
        WHERE \(Item.key) = ?2 AND \(Item.contentHash) IS NOT NULL AND (\(Item.outputPath) <> ?3 OR ?4)
        ON CONFLICT(path) DO NOTHING
        """
    /// A path recorded done again (bytes back as they were) is no longer retired.
    private static let reviveSQL = "DELETE FROM retired WHERE path = ?"

    /// Applies a batch of item events in one transaction.
    package func record(_ events: [ItemEvent], runID: Int64) throws {
        guard !events.isEmpty else { return }
        try database.write { db in
            let now = Date().timeIntervalSince1970
            let started = try db.cachedStatement(sql: Self.startedSQL)
            let unchanged = try db.cachedStatement(sql: Self.unchangedSQL)
            let finished = try db.cachedStatement(sql: Self.finishedSQL)
            let retire = try db.cachedStatement(sql: Self.retireSQL), revive = try db.cachedStatement(sql: Self.reviveSQL)
            for event in events {
                switch event {
                case .started(let key, let fingerprint): try started.execute(arguments: [fingerprint, runID, now, key])
                case .unchanged(let key, let outputPath, let fingerprint), .notRevalidated(let key, let outputPath, let fingerprint):
                    try unchanged.execute(arguments: [fingerprint, outputPath, runID, now, key])
                case .stillFailed: break  // the recorded failure stands as it is
                case .blacklisted(let url, let reason, let message):
                    let seen = Date(timeIntervalSince1970: now)
                    _ = try BlacklistEntry(url: url, kind: reason, httpStatus: reason.httpStatus, message: message, firstSeen: seen,
                                           lastSeen: seen, count: 1)
                        .upsertAndFetch(db, doUpdate: { _ in [BlacklistEntry.Columns.firstSeen.noOverwrite, BlacklistEntry.Columns.count += 1] })
                case .unblocked(let url): try BlacklistEntry.filter(BlacklistEntry.Columns.url == url).deleteAll(db)
                case .source(let sourceKey, let location, let fingerprint, let facts, let derived):
                    try Self.recordSource(facts, derived: derived, of: sourceKey, location: location, fingerprint: fingerprint, at: now, in: db)
                case .finished(let key, let outputPath, let outcome):
                    try retire.execute(arguments: [now, key, outputPath, outcome.state == .skipped])
                    if outcome.state == .done { try revive.execute(arguments: [outputPath]) }
                    let failure = outcome.failure
                    try finished.execute(arguments: [outcome.state, outputPath, failure?.kind,
                                                     failure?.message ?? outcome.reason, outcome.warning, outcome.seconds,
                                                     runID, now, key] + Self.factArguments(outcome))
                }
            }
        }
    }

    /// The `v9: output facts` and `v16: quality choices` columns of a finished item: a done one's output, NULL otherwise.
    private static func factArguments(_ outcome: ItemOutcome) -> StatementArguments {
        guard case .done(let rendered, _) = outcome, let facts = rendered.facts else { return StatementArguments(Array(repeating: nil as Int?, count: 12)) }
        let quality = rendered.quality
        return [rendered.width, rendered.height, rendered.bytes, facts.mediaType, facts.contentHash,
                quality?.quality, quality?.score, quality?.target, quality?.encodes, quality?.capped, quality?.unscorable, quality?.defaultBytes]
    }
}

extension StateStore {
    // MARK: Retired outputs

    /// The manifest that stops naming the retired files went out now (or, without one, the run that retired them ended).
    package func publishRetired(at time: Date = Date()) throws {
        try database.write { db in
            try RetiredOutput.filter(RetiredOutput.Columns.publishedAt == nil).updateAll(db, RetiredOutput.Columns.publishedAt.set(to: time.timeIntervalSince1970))
        }
    }

    /// Every retired file, those published longest ago first; with `dueBefore`, only those published
    /// before it that no item is recorded done at (one pass over the items).
    package func retiredOutputs(dueBefore cutoff: Date? = nil) throws -> [RetiredOutput] {
        try database.read { db in
            guard let cutoff else { return try RetiredOutput.order(RetiredOutput.Columns.publishedAt, RetiredOutput.Columns.path).fetchAll(db) }
            return try RetiredOutput.fetchAll(db, sql: """
                SELECT * FROM retired WHERE published_at < ?
                AND path NOT IN (SELECT \(Item.outputPath) FROM item WHERE \(Item.state) = \(ItemState.done.sql))
                ORDER BY published_at, path
                """, arguments: [cutoff.timeIntervalSince1970])
        }
    }

    /// Retired files removed (or gone): no longer tracked.
    package func forgetRetired(_ paths: [String]) throws {
        guard !paths.isEmpty else { return }
        try database.write { db in _ = try RetiredOutput.filter(paths.contains(RetiredOutput.Columns.path)).deleteAll(db) }
    }
}
