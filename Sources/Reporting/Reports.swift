import Foundation
import Support
import Model
import JobFile
import State

/// The state databases that hold a job's answer: its own, or each shard's of the layout that ran last
/// (`--shard K/N` with the newest run); those of an earlier shard count are no longer counted.
package struct JobDatabases {
    package struct Part {
        package let store: StateStore
        package let runs: [RunRecord]
        /// Which database of the job's layout it is (its shard, if any).
        package let database: JobStateLayout.Database
        /// "3/16", or nil for the whole job's own database.
        package var shard: String? { database.shard?.description }
    }

    package let parts: [Part]
    /// Databases of earlier layouts, by path.
    package let earlier: [String]

    package init(job: Job, runs: Int = 1) throws {
        var opened: [String: Part] = [:]
        let (current, earlier) = try job.stateLayout.current { database in
            guard let store = try StateStore.reading(at: database.path) else { return nil }
            let part = Part(store: store, runs: try store.recentRuns(limit: max(runs, 1)), database: database)
            opened[database.path] = part
            return part.runs.first?.startedAt
        }
        parts = current.compactMap { opened[$0.path] }
        for database in earlier { opened[database.path]?.store.close() }
        try parts.map(\.store).shareCache()
        self.earlier = earlier.map(\.path).sorted()
    }

    /// Every database that answers for the job, read as one (`[StateStore]`'s figures and listings).
    package var stores: [StateStore] { parts.map(\.store) }

    /// Closes every database now (a command's work with them is over).
    package func close() {
        for part in parts { part.store.close() }
    }
}

/// `runner status`: item counts by state and the most recent runs; for a sharded job, totals over
/// its shards and a line per shard.
public struct StatusReport: Encodable, Sendable {
    public let job: String
    public let state: String
    /// False when the job has never run: there is no state database (and none is created).
    public let hasRun: Bool
    public private(set) var items: [ItemState: Int] = [:]
    /// Done items that rendered with a warning (`runner failed` lists them).
    public private(set) var warnings = 0
    /// URL sources served from a cached original since its revalidation failed (`http.staleIfError`).
    public private(set) var notRevalidated = 0
    /// The oldest such failure.
    public private(set) var notRevalidatedSince: Date?
    /// What the quality targets of the done items did.
    public private(set) var qualityTargets = QualityTotals()
    /// Newest first, each with its shard when the job runs as shards.
    public let runs: [JobRun]
    /// One per shard database, when the job runs as shards.
    public private(set) var shards: [ShardStatus] = []
    /// State databases of an earlier shard count, not counted in the totals.
    public let earlierLayouts: [String]

    public struct ShardStatus: Encodable, Sendable {
        public let shard: String
        public let state: String
        public let items: [ItemState: Int]
        public let lastRun: RunRecord?
        /// A run of this shard is going on now.
        public let running: Bool
    }

    public init(job: Job, runs: Int) throws {
        let databases = try JobDatabases(job: job, runs: runs)
        defer { databases.close() }
        try self.init(databases, job: job, runs: runs)
    }

    /// From databases a caller opened (with at least `runs` recent runs each) and closes.
    package init(_ databases: JobDatabases, job: Job, runs: Int) throws {
        self.job = job.name
        state = job.stateShownAs
        hasRun = !databases.parts.isEmpty
        for part in databases.parts {
            let counts = try part.store.stateCounts()
            items.merge(counts, uniquingKeysWith: +)
            warnings += try part.store.warnedItemCount()
            qualityTargets = qualityTargets + (try part.store.qualityTotals())
            let stale = try part.store.notRevalidated()
            notRevalidated += stale.count
            notRevalidatedSince = [notRevalidatedSince, stale.since].compactMap { $0 }.min()
            if let shard = part.shard {
                shards.append(ShardStatus(shard: shard, state: part.database.path, items: counts, lastRun: part.runs.first,
                                          running: RunLock.isHeld(statePath: part.database.path)))
            }
        }
        // The latest runs of every database, newest first by start time (ids count per database).
        let all = databases.parts.flatMap { part in part.runs.map { JobRun(run: $0, shard: part.shard) } }
        self.runs = Array(all.sorted { ($0.run.startedAt, $0.run.id) > ($1.run.startedAt, $1.run.id) }.prefix(runs))
        earlierLayouts = databases.earlier
    }

    public func text() -> String {
        guard hasRun else { return notRunYet(job, state: state) }
        var lines = ["\(job) (\(state)\(shards.isEmpty ? "" : ", \(Format.plural(shards.count, "shard"))"))"]
        lines.append("items: " + Self.describe(items) + (warnings > 0 ? " (\(warnings) with warnings)" : ""))
        if qualityTargets.outputs > 0 { lines.append("quality targets: " + qualityTargets.description) }
        let formatter = ISO8601DateFormatter()
        if notRevalidated > 0 {
            lines.append("not revalidated: \(Format.plural(notRevalidated, "URL source")) served from the cache since "
                + "\(notRevalidatedSince.map(formatter.string) ?? "-") (origin failing; http.staleIfError)")
        }
        for shard in shards {
            let last = shard.lastRun.map { "last run \(formatter.string(from: $0.startedAt)) \($0.outcome) exit \($0.exitCode.map(String.init) ?? "-")" }
            lines.append("shard \(shard.shard): " + Self.describe(shard.items) + "; " + (last ?? "no run")
                + (shard.running ? "; running now" : ""))
        }
        for (name, run) in runs.map({ ($0.name, $0.run) }) {
            // A run closed by the next one (it was killed) has no exit code; it ended at its last commit.
            let ended = run.endedAt.map { end in
                run.exitCode == nil ? "killed; last commit \(formatter.string(from: end))"
                    : String(format: "%.1fs", end.timeIntervalSince(run.startedAt))
            } ?? "no end recorded"
            lines.append("\(name) \(formatter.string(from: run.startedAt)) \(run.outcome) exit \(run.exitCode.map(String.init) ?? "-"): "
                + "\(run.done) done, \(run.failed) failed, \(run.upToDate) up to date, "
                + (run.notRevalidated > 0 ? "\(run.notRevalidated) not revalidated, " : "") + (run.skipped > 0 ? "\(run.skipped) skipped, " : "")
                + "\(run.blocked) blocked (\(ended))")
        }
        if !earlierLayouts.isEmpty {
            lines.append("not counted (an earlier shard count): " + earlierLayouts.map(Paths.lastComponent).joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }

    private static func describe(_ items: [ItemState: Int]) -> String {
        let counts = ItemState.allCases.compactMap { state in items[state].map { "\($0) \(state.rawValue)" } }
        return counts.isEmpty ? "none recorded" : counts.joined(separator: ", ")
    }
}

/// `runner failed`: every failed item and why, every warning, and the blacklist, over every shard;
/// written as the cursors give the lines, so a million failures cost a line of memory.
public enum FailedReport {
    public static func write(_ job: Job, json: Bool, _ emit: @escaping (String) throws -> Void) throws {
        let databases = try JobDatabases(job: job)
        defer { databases.close() }
        let stores = databases.stores
        if json { return try writeJSON(job, stores, emit) }
        guard !stores.isEmpty else { return try emit(notRunYet(job.name, state: job.stateShownAs) + "\n") }
        let formatter = ISO8601DateFormatter()
        var failed = 0
        try stores.forEachFailedItem { item in
            failed += 1
            try emit("\(item.source) -> \(item.output): \(item.kind.rawValue): \(item.message) (failing since \(formatter.string(from: item.since)), "
                     + "\(Format.plural(item.attempts, "attempt")))\n")
        }
        if failed == 0 { try emit("\(job.name): no failed items\n") }
        try stores.forEachWarnedItem { try emit("warning: \($0.key): \($0.warning)\n") }
        try stores.forEachBlockedURL { entry in
            try emit("blocked: \(entry.url): \(entry.message) (first failed \(formatter.string(from: entry.firstSeen)), "
                + "failed \(Format.plural(entry.count, "time")), last \(formatter.string(from: entry.lastSeen)); not requested since)\n")
        }
    }

    /// One object, keys sorted: `blocked`, `failed` and `warnings` a record a line, `hasRun`, `job`, `state`.
    private static func writeJSON(_ job: Job, _ stores: [StateStore], _ emit: @escaping (String) throws -> Void) throws {
        let encoder = JSONEncoder.printing(pretty: false)
        func list<R: Encodable>(_ name: String, _ forEach: ((R) throws -> Void) throws -> Void) throws {
            var count = 0
            try emit("  \"\(name)\" : [")
            try forEach { record in
                try emit((count == 0 ? "\n    " : ",\n    ") + (try encoder.text(record)))
                count += 1
            }
            try emit(count == 0 ? "]" : "\n  ]")
        }
        struct Header: Encodable { let hasRun: Bool, job: String, state: String }
        let header = try JSONEncoder.printing().text(Header(hasRun: !stores.isEmpty, job: job.name, state: job.stateShownAs))
        try emit("{\n")
        try list("blocked") { try stores.forEachBlockedURL($0) }
        try emit(",\n")
        try list("failed") { try stores.forEachFailedItem($0) }
        // The header's lines, between its braces.
        try emit(",\n" + header.dropFirst(2).dropLast(2) + ",\n")
        try list("warnings") { try stores.forEachWarnedItem($0) }
        try emit("\n}\n")
    }
}

/// What `status`, `failed` and `prune` say about a job with no state database.
public func notRunYet(_ jobName: String, state: String) -> String {
    "\(jobName) has not run yet (no state database at \(state))"
}

extension JSONEncoder {
    /// JSON as the commands print it: keys sorted, `/` as written, dates ISO 8601; indented unless a line.
    package static func printing(pretty: Bool = true) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    package func text(_ value: some Encodable) throws -> String { String(decoding: try encode(value), as: UTF8.self) }
}
