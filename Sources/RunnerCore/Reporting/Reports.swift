import Foundation

/// `runner status`: item counts by state and the most recent runs.
public struct StatusReport: Codable, Sendable {
    public let job: String
    public let state: String
    public let items: [String: Int]
    /// Done items that rendered with a warning (`runner failed` lists them).
    public let warnings: Int
    public let runs: [RunRecord]

    public init(job: Job, runs: Int) throws {
        let store = try StateStore(path: job.statePath)
        self.job = job.name
        state = job.statePath
        items = try store.stateCounts()
        warnings = try store.warnedItemCount()
        self.runs = try store.recentRuns(limit: runs)
    }

    public func json() throws -> String { try encodeJSON(self) }

    public func text() -> String {
        var lines = ["\(job) (\(state))"]
        let order = ["done", "failed", "blocked", "running", "pending"]
        let counts = order.compactMap { state in items[state].map { "\($0) \(state)" } }
        lines.append("items: " + (counts.isEmpty ? "none recorded" : counts.joined(separator: ", "))
            + (warnings > 0 ? " (\(warnings) with warnings)" : ""))
        for run in runs {
            let ended = run.endedAt.map { String(format: "%.1fs", $0.timeIntervalSince(run.startedAt)) } ?? "no end recorded"
            lines.append("run \(run.id) \(ISO8601DateFormatter().string(from: run.startedAt)) \(run.outcome) exit \(run.exitCode.map(String.init) ?? "-"): "
                + "\(run.done) done, \(run.failed) failed, \(run.upToDate) up to date, \(run.blocked) blocked (\(ended))")
        }
        return lines.joined(separator: "\n")
    }
}

/// `runner failed`: every failed item and why, and every item that rendered with a warning.
public struct FailedReport: Codable, Sendable {
    public let job: String
    public let failed: [FailedItemRecord]
    public let warnings: [WarnedItemRecord]
    /// The failed-URL blacklist: URLs later runs skip without a request.
    public let blocked: [BlacklistEntry]

    public init(job: Job) throws {
        self.job = job.name
        let store = try StateStore(path: job.statePath)
        failed = try store.failedItems()
        warnings = try store.warnedItems()
        blocked = try store.blockedURLs()
    }

    public func json() throws -> String { try encodeJSON(self) }

    public func text() -> String {
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

private func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}
