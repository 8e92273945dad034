import Support
import Model

/// The JSON Schema (draft 2020-12) of a `--log-format json` line (`RunEvent`): `runner schema --events`.
package enum RunEventSchema {
    private static let count: JSONValue = ["type": "integer", "minimum": 0]
    private static let seconds: JSONValue = ["type": "number", "minimum": 0]
    private static let string: JSONValue = ["type": "string"]
    private static let job: JSONValue = ["type": "string", "description": "The job's name."]

    /// An object with `event` and `time` beside `fields`, every one required but the `optional` ones.
    private static func event(_ name: String, _ description: String, _ fields: [String: JSONValue],
                              optional: Set<String> = [], rules: JSONValue? = nil) -> JSONValue {
        let properties = fields.merging([
            "event": ["const": .string(name)],
            "time": ["type": "string", "pattern": #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#,
                     "description": "When the line was written: ISO 8601, UTC, milliseconds."],
        ]) { $1 }
        var schema: [String: JSONValue] = [
            "type": "object", "description": .string(description), "additionalProperties": false, "properties": .object(properties),
            "required": .array(properties.keys.filter { !optional.contains($0) }.sorted().map(JSONValue.string)),
        ]
        schema["allOf"] = rules
        return .object(schema)
    }

    /// Required fields when `state` is `value`.
    private static func when(state value: RunEvent.Item.State, require fields: [JSONValue]) -> JSONValue {
        ["if": ["properties": ["state": ["const": .string(value.rawValue)]]], "then": ["required": .array(fields)]]
    }

    private static let plan = event("plan", "The plan's counts, as `runner plan --json` names them, and what the sweep for temporary files did.", [
        "job": job,
        "toRun": count, "revalidate": count, "upToDate": count, "blocked": count, "knownFailures": count, "collisions": count,
        "toDerive": ["type": "integer", "minimum": 0, "description": "Derived values to compute."],
        "reusedSources": ["type": "boolean", "description": "The shard took its sources from its last plan."],
        "foldersSwept": ["type": "integer", "minimum": 0, "description": "Output folders whose names were read."],
        "foldersKnownClean": ["type": "integer", "minimum": 0, "description": "Output folders skipped, unchanged since a sweep found them clean."],
        "temporariesRemoved": ["type": "integer", "minimum": 0, "description": "Temporary files of a killed run removed."],
    ])

    private static let item = event("item", "An item this run finished, or found nothing to do for (a URL revalidated).", [
        "key": ["type": "string", "description": "The item's key: its source key, `@`, its output's name."],
        "output": ["type": "string", "description": "The output file's path."],
        "state": ["enum": .array(RunEvent.Item.State.allCases.map { .string($0.rawValue) }),
                  "description": "done, failed, blocked or skipped (a narrower output holds its bytes); a URL revalidated: up-to-date, not-revalidated (the origin failing) or known-failure."],
        "seconds": ["type": "number", "minimum": 0, "description": "How long a done or failed item took."],
        "kind": ["enum": .array(ItemFailure.Kind.allCases.map { .string($0.rawValue) }), "description": "A failed item's failure kind."],
        "message": ["type": "string", "description": "Why a failed item failed, why a blocked one was not tried, which output holds a skipped one's bytes."],
        "warning": ["type": "string", "description": "What a done item said though it rendered (an ignored ICC profile)."],
    ], optional: ["seconds", "kind", "message", "warning"], rules: [
        when(state: .done, require: ["seconds"]),
        when(state: .failed, require: ["seconds", "kind", "message"]),
        when(state: .blocked, require: ["message"]),
        when(state: .skipped, require: ["message"]),
    ])

    private static let libvipsWarning = event("libvips-warning", "With -v: a distinct warning libvips gave while rendering a source.",
                                              ["source": string, "message": string])

    private static let notice = event("notice", "Something the run says once: a worker restarted, an origin failing, a signal, the time budget.",
                                      ["message": string])

    private static let progress = event("progress", "Every --progress-interval seconds.", [
        "job": job, "finished": count, "total": count, "failed": count,
        "seconds": ["type": "number", "minimum": 0, "description": "Since the run started."],
    ])

    private static let summary = event("summary", "The last line: the run's counts and how it ended.", [
        "job": job, "done": count, "failed": count, "upToDate": count, "blocked": count, "skipped": count, "knownFailures": count,
        "notRevalidated": count, "derived": count, "notStarted": count, "seconds": seconds, "workersStarted": count,
        "exitCode": ["type": "integer", "minimum": 0, "maximum": 255, "description": "The exit status the run returns."],
        "interrupted": ["type": ["integer", "null"], "description": "The signal that interrupted the run."],
        "stoppedByBudget": ["type": "boolean", "description": "The time budget ran out, work was left for the next run."],
        "outcome": ["enum": .array(RunOutcome.allCases.filter { $0 != .running }.map { .string($0.rawValue) })],
        "failure": ["type": ["string", "null"], "description": "What stopped the run, or failed after its work (exitCode says which)."],
        "qualityTargets": qualityTotals,
    ])

    /// `QualityTotals`.
    static let qualityTotals: JSONValue = [
        "type": "object", "additionalProperties": false,
        "description": .string("The outputs this run encoded under a quality target: their bytes, the same outputs' bytes at their formats' "
            + "fixed default quality, the encodes made, how many stopped at maxEncodes, stayed below the target even at 100, or could not be scored."),
        "required": ["outputs", "bytes", "defaultBytes", "encodes", "capped", "belowTarget", "unscorable"],
        "properties": ["outputs": count, "bytes": count, "defaultBytes": count, "encodes": count, "capped": count, "belowTarget": count,
                       "unscorable": count],
    ]

    package static var document: JSONValue {
        let events = ["plan": plan, "item": item, "libvips-warning": libvipsWarning, "notice": notice, "progress": progress, "summary": summary]
        return [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "runner --log-format json event",
            "description": "One line of a run's stdout with --log-format json: a plan event first, a summary event last.",
            "type": "object",
            "required": ["event"],
            "properties": ["event": ["enum": .array(events.keys.sorted().map(JSONValue.string))]],
            // By name, so a validator says what is wrong with the event rather than that it matches none.
            "allOf": .array(events.keys.sorted().map { ["if": ["properties": ["event": ["const": .string($0)]]], "then": ["$ref": .string("#/$defs/\($0)")]] }),
            "$defs": .object(events),
        ]
    }

    /// As `runner schema --events` prints it: indented, keys sorted.
    package static var text: String { document.formatted() }
}
