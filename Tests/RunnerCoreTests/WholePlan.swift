import TestSupport

/// A whole plan at once, for assertions: runs and `runner plan` stream sources instead.
struct Plan {
    var sources: [PlannedSource]

    var items: [PlannedItem] { sources.flatMap(\.items) }

    var counts: PlanCounts { sources.reduce(into: PlanCounts()) { $0.add($1) } }

    func count(_ status: PlannedItem.Status) -> Int { counts[status] }
}

extension Planner {
    func expand() throws -> Plan {
        var sources: [PlannedSource] = []
        try forEachSource { sources.append($0) }
        return Plan(sources: sources)
    }

    func classify(_ plan: Plan, state: some PlanningLookup, retryFailed: Bool) throws -> Plan {
        var plan = plan
        for index in plan.sources.indices {
            try classifier.classify(&plan.sources[index], state: state, retryFailed: retryFailed)
        }
        return plan
    }
}
