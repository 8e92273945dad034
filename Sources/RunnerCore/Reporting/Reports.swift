import Foundation

/// `runner status`: item counts by state and the most recent runs.
public struct StatusReport: Codable, Sendable {
    public let job: String
    public let state: String
    /// False when the job has never run: there is no state database (and none is created).
    public let hasRun: Bool
    public let items: [String: Int]
    /// Done items that rendered with a warning (`runner failed` lists them).
    public let warnings: Int
    public let runs: [RunRecord]

    public init(job: Job, runs: Int) throws {
        let store = try StateStore.existing(at: job.statePath)
        self.job = job.name
        state = job.statePath
        hasRun = store != nil
        items = try store?.stateCounts() ?? [:]
        warnings = try store?.warnedItemCount() ?? 0
        self.runs = try store?.recentRuns(limit: runs) ?? []
    }

    public func json() throws -> String { try encodeJSON(self) }

    public func text() -> String {
        guard hasRun else { return notRunYet(job, state: state) }
        var lines = ["\(job) (\(state))"]
        let order = ["done", "failed", "blocked", "running", "pending"]
        let counts = order.compactMap { state in items[state].map { "\($0) \(state)" } }
        lines.append("items: " + (counts.isEmpty ? "none recorded" : counts.joined(separator: ", "))
            + (warnings > 0 ? " (\(warnings) with warnings)" : ""))
        let formatter = ISO8601DateFormatter()
        for run in runs {
            // A run closed by the next one (it was killed) has no exit code; it ended at its last commit.
            let ended = run.endedAt.map { end in
                run.exitCode == nil ? "killed; last commit \(formatter.string(from: end))"
                    : String(format: "%.1fs", end.timeIntervalSince(run.startedAt))
            } ?? "no end recorded"
            lines.append("run \(run.id) \(formatter.string(from: run.startedAt)) \(run.outcome) exit \(run.exitCode.map(String.init) ?? "-"): "
                + "\(run.done) done, \(run.failed) failed, \(run.upToDate) up to date, \(run.blocked) blocked (\(ended))")
        }
        return lines.joined(separator: "\n")
    }
}

/// `runner failed`: every failed item and why, and every item that rendered with a warning.
public struct FailedReport: Codable, Sendable {
    public let job: String
    /// False when the job has never run: there is no state database (and none is created).
    public let hasRun: Bool
    public let failed: [FailedItemRecord]
    public let warnings: [WarnedItemRecord]
    /// The failed-URL blacklist: URLs later runs skip without a request.
    public let blocked: [BlacklistEntry]
    public let state: String

    public init(job: Job) throws {
        self.job = job.name
        state = job.statePath
        let store = try StateStore.existing(at: job.statePath)
        hasRun = store != nil
        failed = try store?.failedItems() ?? []
        warnings = try store?.warnedItems() ?? []
        blocked = try store?.blockedURLs() ?? []
    }

    public func json() throws -> String { try encodeJSON(self) }

    public func text() -> String {
        guard hasRun else { return notRunYet(job, state: state) }
        var lines = failed.map { "\($0.source) -> \($0.output): \($0.kind): \($0.message) (attempts: \($0.attempts))" }
        if failed.isEmpty { lines.append("\(job): no failed items") }
        lines += warnings.map { "warning: \($0.key): \($0.warning)" }
        let formatter = ISO8601DateFormatter()
        for entry in blocked {
            lines.append("blocked: \(entry.url): \(entry.message) (since \(formatter.string(from: entry.firstSeen)), "
                + "seen \(entry.count) time\(entry.count == 1 ? "" : "s"))")
        }
        return lines.joined(separator: "\n")
    }
}

/// What `status`, `failed` and `prune` say about a job with no state database.
public func notRunYet(_ jobName: String, state: String) -> String {
    "\(jobName) has not run yet (no state database at \(state))"
}

private func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}
