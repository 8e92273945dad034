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
    // MARK: Runs

    /// Starts a run: `body` plans it with lookups and `recordPlanned`, all in one transaction, so
    /// a job-file error found halfway leaves no trace. Returns the run's id and what `body` returned.
    package func beginRun(vipsVersion: String, limitsDigest: String,
                  _ body: (PlanningPass) throws -> PlanCounts) throws -> (Int64, PlanCounts) {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO run (started_at, pid, runner_version, vips_version, limits, planned, up_to_date, blocked)
                VALUES (?, ?, ?, ?, ?, 0, 0, 0)
                """, arguments: [Date().timeIntervalSince1970, Int(getpid()), RunnerVersion.string, vipsVersion, limitsDigest])
            let runID = db.lastInsertedRowID
            let counts = try body(PlanningPass(db: db, runID: runID, others: others, limits: limitsDigest))
            try db.execute(sql: "UPDATE run SET planned = ?, up_to_date = ?, blocked = ? WHERE id = ?",
                           arguments: [counts.pending, counts.upToDate, counts.blocked, runID])
            return (runID, counts)
        }
    }

    /// Closes the runs a killed process left `running`; only call it holding the job's `RunLock`,
    /// which proves that no run is alive. Each becomes `interrupted`, ended at its last commit (its
    /// items' latest update, else its start), with the done and failed items it recorded; its
    /// items still `running` become `pending`.
    package func closeAbandonedRuns() throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE run SET outcome = \(RunOutcome.interrupted.sql), ended_at = COALESCE(last.at, run.started_at),
                    done = last.done, failed = last.failed
                FROM (SELECT dead.id, MAX(item.updated_at) AS at, COUNT(CASE item.state WHEN \(ItemState.done.sql) THEN 1 END) AS done,
                             COUNT(CASE item.state WHEN \(ItemState.failed.sql) THEN 1 END) AS failed
                      FROM run AS dead LEFT JOIN item ON item.run_id = dead.id
                      WHERE dead.outcome = \(RunOutcome.running.sql) GROUP BY dead.id) AS last
                WHERE run.id = last.id;
                UPDATE item SET state = \(ItemState.pending.sql) WHERE state = \(ItemState.running.sql);
                """)
        }
    }

    package func finishRun(_ runID: Int64, summary: RunSummary) throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE run SET ended_at = ?, done = ?, failed = ?, up_to_date = ?, not_revalidated = ?, blocked = ?, outcome = ?,
                    exit_code = ?
                WHERE id = ?
                """, arguments: [Date().timeIntervalSince1970, summary.done, summary.failed, summary.upToDate, summary.notRevalidated,
                                 summary.blocked, summary.outcome, summary.exitCode, runID])
            // Items abandoned in flight (a second signal killed their workers) run again next time.
            try db.execute(sql: "UPDATE item SET state = \(ItemState.pending.sql) WHERE state = \(ItemState.running.sql)")
        }
    }

    // MARK: Recording

    /// Applies a batch of item events in one transaction.
    package func record(_ events: [ItemEvent], runID: Int64) throws {
        guard !events.isEmpty else { return }
        try database.write { db in
            let now = Date().timeIntervalSince1970
            let started = try db.cachedStatement(sql: """
                UPDATE item SET state = \(ItemState.running.sql), attempts = CASE WHEN fingerprint = ?1 THEN attempts + 1 ELSE 1 END,
                    fingerprint = ?1, run_id = ?2, updated_at = ?3
                WHERE key = ?4
                """)
            let unchanged = try db.cachedStatement(sql: """
                UPDATE item SET state = \(ItemState.done.sql), fingerprint = ?, output_path = ?, error_kind = NULL, error_message = NULL,
                    run_id = ?, updated_at = ?
                WHERE key = ?
                """)
            // A failure no worker started (a download, a vanished file) is a try too; `started` counted the others.
            let finished = try db.cachedStatement(sql: """
                UPDATE item SET attempts = attempts + (state <> \(ItemState.running.sql) AND ?1 = \(ItemState.failed.sql)),
                    failed_since = CASE WHEN ?1 = \(ItemState.failed.sql) THEN COALESCE(failed_since, ?8) END,
                    state = ?1, output_path = ?2, error_kind = ?3, error_message = ?4, warning = ?5, duration = ?6,
                    run_id = ?7, updated_at = ?8,
                    width = ?10, height = ?11, bytes = ?12, media_type = ?13, content_hash = ?14
                WHERE key = ?9
                """)
            for event in events {
                switch event {
                case .started(let key, let fingerprint):
                    try started.execute(arguments: [fingerprint, runID, now, key])
                case .unchanged(let key, let outputPath, let fingerprint), .notRevalidated(let key, let outputPath, let fingerprint):
                    try unchanged.execute(arguments: [fingerprint, outputPath, runID, now, key])
                case .stillFailed:
                    break  // the recorded failure stands as it is
                case .blacklisted(let url, let reason, let message):
                    try db.execute(sql: """
                        INSERT INTO blacklist (url, kind, http_status, message, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(url) DO UPDATE SET kind = excluded.kind, http_status = excluded.http_status,
                            message = excluded.message, last_seen = excluded.last_seen, count = count + 1
                        """, arguments: [url, reason, reason.httpStatus, message, now, now])
                case .unblocked(let url):
                    try db.execute(sql: "DELETE FROM blacklist WHERE url = ?", arguments: [url])
                case .source(let sourceKey, let location, let fingerprint, let facts, let derived):
                    try Self.recordSource(facts, derived: derived, of: sourceKey, location: location, fingerprint: fingerprint, at: now, in: db)
                case .finished(let key, let outputPath, let outcome):
                    let failure = outcome.failure
                    try finished.execute(arguments: [outcome.state.rawValue, outputPath, failure?.kind.rawValue,
                                                     failure?.message ?? outcome.blockedReason, outcome.warning, outcome.seconds,
                                                     runID, now, key] + Self.factArguments(outcome))
                }
            }
        }
    }

    /// The `v9: output facts` columns of a finished item: a done one's output, NULL otherwise.
    private static func factArguments(_ outcome: ItemOutcome) -> StatementArguments {
        guard case .done(let rendered, _) = outcome, let facts = rendered.facts else { return StatementArguments(Array(repeating: nil as Int?, count: 5)) }
        return [rendered.width, rendered.height, rendered.bytes, facts.mediaType, facts.contentHash]
    }
}
