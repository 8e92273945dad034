import Foundation
import Support
import JobFile

/// A shard's last complete plan, kept by its state database: its own sources in order, under the
/// fingerprint of what decided them (`SourceInputs`), and what its walks saw (`WalkedPath`). A plan
/// under the same fingerprint, every walked path unchanged, replays those sources instead of reading
/// the whole job's lists and folders and naming every other shard's outputs.
package protocol SourceMemory {
    /// Visits the recorded sources and returns true when the record was made under `inputs` and
    /// `unchanged` holds for each recorded `WalkedPath`; returns false, having visited none, otherwise.
    func replaySources(madeUnder inputs: String, ifEach unchanged: (WalkedPath) -> Bool,
                       _ visit: (SourceEntry) throws -> Void) throws -> Bool
    /// Drops the record; a plan then records its sources and walks, sealed once the whole job
    /// passed the collision check.
    func forgetSources() throws
    func recordSource(_ entry: SourceEntry) throws
    func recordWalked(_ path: WalkedPath) throws
    func sealSources(madeUnder inputs: String) throws
}

/// What decides a shard's own sources and whether two outputs collide: runner's version, the shard,
/// the job's sources (each list by path and `FileIdentity`), and what names an output (name, path
/// template, format, the manifest's paths). What a walk finds is recorded beside it (`WalkedPath`).
/// Nil when a list cannot be `stat`ed.
package struct SourceInputs: Equatable {
    package let fingerprint: String
    /// The latest modification or change time of any list, in nanoseconds.
    package let latestChange: Int64

    package init?(_ job: Job) {
        var hash = StableHash()
        var latest = Int64.min
        hash.combine(RunnerVersion.string)
        hash.combine(job.shard?.description ?? "-")
        hash.combine(String(job.sources.count))
        for spec in job.sources {
            guard spec.listing.addInputs(to: &hash, latestChange: &latest) else { return nil }
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
}

/// The state database's record of a plan names a source the job does not: something else changed it.
package struct RememberedSourceMismatch: Error, CustomStringConvertible {
    package let entry: SourceEntry

    package var description: String {
        "the state database's record of the last plan names a source the job does not (sources[\(entry.spec)]): run with --force to find the sources again"
    }
}

/// What a walk saw at one path, as a shard's plan records it: seeing the same at every recorded path, it finds the same sources.
package struct WalkedPath: Equatable, Sendable {
    package enum Seen: Equatable, Sendable {
        /// A folder it read, by its identity from before its names were read.
        case read(FileIdentity)
        /// Only whether the path is a folder or something else (a `path` naming a file, a glob
        /// naming one path, a symlink to a folder the walk did not enter).
        case folder, other
        /// Nothing there, also behind a dangling symlink (taken for a file until a folder appears).
        case missing
        /// No folder to list (`ENOENT`, `ENOTDIR`); any other failure is a walk's error, never the same.
        case absent
    }

    package let path: String
    package let seen: Seen

    package init(path: String, seen: Seen) { (self.path, self.seen) = (path, seen) }

    package init(_ path: String, entryIsFolder: Bool) { self.init(path: path, seen: entryIsFolder ? .folder : .other) }

    /// Whether `path` is a folder, something else, or nothing, as `stat` (following symlinks) says now.
    package init(kindAt path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { self.init(path: path, seen: .missing); return }
        self.init(path, entryIsFolder: (info.st_mode & S_IFMT) == S_IFDIR)
    }

    package var isMissing: Bool { seen == .missing }

    /// A folder's latest modification or change time (ns), for the racy rule; nil for the others.
    package var latestChange: Int64? { if case .read(let identity) = seen { identity.latestChange } else { nil } }

    /// Whether a walk would see the same at `path` now: one `stat`.
    package var isUnchanged: Bool {
        switch seen {
        case .folder, .other: return WalkedPath(kindAt: path).seen == seen
        case .absent:
            var info = stat()
            return stat(path, &info) != 0 && (errno == ENOENT || errno == ENOTDIR)
        case .read, .missing: return (FileIdentity(path: path).map(Seen.read) ?? .missing) == seen
        }
    }
}
