import Foundation
import Model
import Planning
import Output

/// One line of `--log-format json`: the event's name in `event`, when it was written in `time`, and
/// its own fields; `RunEventSchema` is its JSON Schema (`runner schema --events`).
package struct RunEvent: Codable, Sendable {
    package var time: String
    package var body: Body

    package enum Body: Sendable {
        case plan(Plan)
        case item(Item)
        case libvipsWarning(LibvipsWarning)
        case notice(Notice)
        case progress(Progress)
        case summary(Summary)
    }

    /// The plan's counts (`runner plan --json`'s names) and what the sweep for temporary files did.
    package struct Plan: Codable, Sendable {
        package var counts: PlanCounts
        package var fields: Fields

        package struct Fields: Codable, Sendable {
            package var job: String
            package var foldersSwept, foldersKnownClean, temporariesRemoved: Int
        }

        package init(job: String, counts: PlanCounts, sweep: AtomicFile.Sweep) {
            self.counts = counts
            fields = Fields(job: job, foldersSwept: sweep.read, foldersKnownClean: sweep.skipped, temporariesRemoved: sweep.removed)
        }

        package init(from decoder: any Decoder) throws { (counts, fields) = (try PlanCounts(from: decoder), try Fields(from: decoder)) }

        package func encode(to encoder: any Encoder) throws {
            try counts.encode(to: encoder)
            try fields.encode(to: encoder)
        }
    }

    /// An item this run finished, or found it had nothing to do for (a URL revalidated).
    package struct Item: Codable, Sendable {
        package enum State: String, Codable, Sendable, CaseIterable {
            case done, failed, blocked, skipped
            case upToDate = "up-to-date", notRevalidated = "not-revalidated", knownFailure = "known-failure"
        }

        package var key, output: String
        package var state: State
        /// How long a done or failed item took.
        package var seconds: Double?
        package var kind: ItemFailure.Kind?
        /// Why it failed, why it was blocked, or which output holds a skipped one's bytes.
        package var message: String?
        package var warning: String?

        package init(key: String, output: String, state: State) {
            (self.key, self.output, self.state) = (key, output, state)
        }

        package init(key: String, output: String, outcome: ItemOutcome) {
            (self.key, self.output) = (key, output)
            switch outcome {
            case .done(let rendered, let seconds): (state, self.seconds, warning) = (.done, seconds, rendered.warning)
            case .failed(let failure, let seconds): (state, self.seconds, kind, message) = (.failed, seconds, failure.kind, failure.message)
            case .blocked, .skipped: (state, message) = (outcome.state == .skipped ? .skipped : .blocked, outcome.reason)
            }
        }
    }

    /// With `-v`: a distinct libvips warning while rendering `source`.
    package struct LibvipsWarning: Codable, Sendable {
        package var source, message: String
    }

    package struct Notice: Codable, Sendable {
        package var message: String
    }

    /// Every `--progress-interval` seconds.
    package struct Progress: Codable, Sendable {
        package var job: String
        package var finished, total, failed: Int
        package var seconds: Double
    }

    /// The last line: `RunSummary`'s counts and how the run ended.
    package struct Summary: Codable, Sendable {
        package var job: String
        package var done, failed, upToDate, blocked, skipped, knownFailures, notRevalidated, derived, notStarted: Int
        package var seconds: Double
        package var exitCode: Int
        package var workersStarted: Int
        /// The signal that interrupted the run.
        @OrNull package var interrupted: Int?
        package var stoppedByBudget: Bool
        package var outcome: RunOutcome
        /// What stopped the run, or failed after its work.
        @OrNull package var failure: String?
        package var qualityTargets: QualityTotals

        package init(job: String, _ summary: RunSummary) {
            self.job = job
            (done, failed, upToDate, blocked, skipped) = (summary.done, summary.failed, summary.upToDate, summary.blocked, summary.skipped)
            (knownFailures, notRevalidated, derived, notStarted) = (summary.knownFailures, summary.notRevalidated, summary.derived, summary.notStarted)
            (seconds, exitCode, workersStarted) = (summary.elapsedSeconds, Int(summary.exitCode), summary.workersStarted)
            (stoppedByBudget, outcome) = (summary.stoppedByBudget, summary.outcome)
            interrupted = summary.interrupted.map(Int.init)
            failure = summary.failure?.message
            qualityTargets = summary.qualityTargets
        }
    }

    /// A value written as `null` when absent rather than left out.
    @propertyWrapper package struct OrNull<Value: Codable & Sendable>: Codable, Sendable {
        package var wrappedValue: Value?

        package init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(wrappedValue)
        }
    }

    package init(time: String, body: Body) {
        (self.time, self.body) = (time, body)
    }

    private enum Name: String, Codable { case plan, item, libvipsWarning = "libvips-warning", notice, progress, summary }
    private enum Envelope: CodingKey { case event, time }

    private var named: (Name, any Encodable) {
        switch body {
        case .plan(let fields): (.plan, fields)
        case .item(let fields): (.item, fields)
        case .libvipsWarning(let fields): (.libvipsWarning, fields)
        case .notice(let fields): (.notice, fields)
        case .progress(let fields): (.progress, fields)
        case .summary(let fields): (.summary, fields)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        let (name, fields) = named
        try fields.encode(to: encoder)
        var container = encoder.container(keyedBy: Envelope.self)
        try container.encode(name, forKey: .event)
        try container.encode(time, forKey: .time)
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Envelope.self)
        time = try container.decode(String.self, forKey: .time)
        body = switch try container.decode(Name.self, forKey: .event) {
        case .plan: .plan(try Plan(from: decoder))
        case .item: .item(try Item(from: decoder))
        case .libvipsWarning: .libvipsWarning(try LibvipsWarning(from: decoder))
        case .notice: .notice(try Notice(from: decoder))
        case .progress: .progress(try Progress(from: decoder))
        case .summary: .summary(try Summary(from: decoder))
        }
    }

    /// One line: keys sorted, paths and URLs as written (`/` needs no escape in JSON).
    package func line() throws -> String { try JSONEncoder.printing(pretty: false).text(self) }
}
