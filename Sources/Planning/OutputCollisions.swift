import Support

/// Finds output paths written by two different items anywhere in a job, in memory that does not grow
/// with it: each output is 16 bytes (digests of its path and its item key) in one of 64 partitions
/// (`SpilledRecords`), each sorted on its own at the end (2.5 MB for ten million outputs): neighbours
/// with one path and two keys are suspects, which the planner confirms by name (digests can match by chance).
package struct OutputCollisions: ~Copyable {
    struct Record: Comparable {
        let path: UInt64
        let item: UInt64
        static func < (a: Record, b: Record) -> Bool { (a.path, a.item) < (b.path, b.item) }
    }

    private static let partitionCount = 64
    private var records: SpilledRecords<Record>

    /// Spills, if the job is large enough to need it, into `folder`.
    package init(spillingInto folder: String) {
        records = SpilledRecords(partitions: Self.partitionCount, spillingInto: folder, prefix: ".runner-outputs-")
    }

    /// Adds an output: its path, and its item's digest (the same item named twice is no collision).
    package mutating func add(path: String, item: UInt64) throws(SpillFailure) {
        let digest = StableHash.value(path)
        // The top bits pick the partition: the low ones are what a partition's sort compares first.
        let partition = Int(truncatingIfNeeded: (digest &* 0x9e37_79b9_7f4a_7c15) >> 58)
        try records.append(Record(path: digest, item: item), to: partition)
    }

    /// Digests of paths named by at least two different items.
    package mutating func suspects() throws(SpillFailure) -> Set<UInt64> {
        var found = Set<UInt64>()
        for partition in 0..<Self.partitionCount {
            var records = try self.records.readBack(partition)
            records.sort()
            for index in records.indices.dropFirst()
            where records[index].path == records[index - 1].path && records[index].item != records[index - 1].item {
                found.insert(records[index].path)
            }
        }
        return found
    }
}
