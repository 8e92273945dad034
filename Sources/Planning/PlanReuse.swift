import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Imaging
import Manifest

/// A shard's last complete plan, kept by its state database (`StateStore.PlanningPass`): the own
/// sources that plan visited, in order, under the fingerprint of everything that decided them
/// (`PlanInputs`). A plan made under the same fingerprint visits those sources again instead of
/// reading the whole job's lists and naming every other shard's outputs for the collision check.
package protocol PlanMemory {
    /// Visits the recorded sources and returns true when the record was made under `inputs`;
    /// returns false, having visited none, otherwise.
    func replaySources(madeUnder inputs: String, _ visit: (SourceEntry) throws -> Void) throws -> Bool
    /// Drops the record; a plan that finds its sources then records them (`recordSource`) and,
    /// once the whole job passed the collision check, seals them (`sealSources`).
    func forgetSources() throws
    func recordSource(_ entry: SourceEntry) throws
    func sealSources(madeUnder inputs: String) throws
}

/// What decides a shard's own sources and whether any two outputs of the job collide: runner's
/// version, the shard, the job's sources (inline URLs whole; each list by path and identity:
/// device, inode, size, modification and change times in nanoseconds), and what names an output
/// (each output's name, path template and format, the manifest's paths). Nil for a job with a
/// folder or glob source: those are walked every time.
package struct PlanInputs: Equatable {
    package let fingerprint: String
    /// The latest modification or change time of any list, in nanoseconds.
    private let latestChange: Int64

    package init?(_ job: Job) {
        var hash = StableHash()
        var latest = Int64.min
        hash.combine(RunnerVersion.string)
        hash.combine(job.shard?.description ?? "-")
        hash.combine(String(job.sources.count))
        for spec in job.sources {
            switch spec {
            case .list(let path):
                guard let identity = FileIdentity(path: path) else { return nil }
                latest = max(latest, identity.latestChange)
                hash.combine("list")
                hash.combine(path)
                hash.combine(identity.description)
            case .url(let url, let key, let headers):
                hash.combine("url")
                hash.combine(url)
                hash.combine(key.map { "key:" + $0 } ?? "-")
                hash.combine(String(headers.count))
                for (name, value) in headers.sorted(by: { $0.key < $1.key }) { hash.combine(name); hash.combine(value) }
            case .path, .glob:
                return nil
            }
        }
        hash.combine(String(job.outputs.count))
        for output in job.outputs {
            hash.combine(output.name)
            hash.combine(output.template.identifier)
            hash.combine(type(of: output.encoder).type)
        }
        hash.combine(job.manifest?.path ?? "-")
        hash.combine(job.manifestPath ?? "-")
        fingerprint = hash.hex
        latestChange = latest
    }

    /// Whether every list was last changed at least `FileIdentity.racyWindow` before `time` (seconds).
    package func settled(before time: Double) -> Bool {
        latestChange < Int64(time * 1e9) - FileIdentity.racyWindow
    }
}

/// The state database's record of a plan names a source the job does not: it was changed by
/// something other than runner. `--force` finds the sources again and records them afresh.
package struct RecordedPlanMismatch: Error, CustomStringConvertible {
    package let entry: SourceEntry

    package var description: String {
        "the state database's record of the last plan names a source the job does not (sources[\(entry.spec)]): run with --force to find the sources again"
    }
}
