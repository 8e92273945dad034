import Foundation
import Support
import JobFile
import Reporting

extension JobRunner {
    /// Where `runner manifest` went.
    public enum ManifestOutcome: Sendable, Equatable {
        /// Written to this file (`changed` false: it already held these bytes and was left alone).
        case written(String, changed: Bool)
        /// Printed on stdout.
        case printed
        /// The job has no state database: nothing written.
        case neverRun
    }

    /// `runner manifest`: the site manifest from the state databases alone (every shard's of the
    /// layout that ran last, merged), to `out` (`-`: stdout), else the job's `manifest.path`, else
    /// stdout; JSON Lines with `jsonl`, else the job's `manifest.format` at its own path, else JSON.
    public static func manifest(_ job: Job, out: String?, jsonl: Bool) throws -> ManifestOutcome {
        let databases = try JobDatabases(job: job)
        guard !databases.parts.isEmpty else { return .neverRun }
        defer { databases.close() }
        let current = FileManager.default.currentDirectoryPath
        let path = out == "-" ? nil : out.map { Paths.resolve($0, against: current) } ?? job.manifest?.path
        // The job's format goes with the job's file; any other file is JSON unless asked.
        let format: SiteManifestFormat = jsonl ? .jsonl : path != nil && path == job.manifest?.path ? job.manifest!.format : .json
        let writer = SiteManifestWriter(job: job, stores: databases.stores, base: path.map(Paths.directory(of:)) ?? Paths.normalize(current),
                                        format: format)
        guard let path else {
            let output = FileHandle.standardOutput
            try writer.write { try output.write(contentsOf: Data($0.utf8)) }
            return .printed
        }
        return .written(path, changed: try writer.write(to: path, of: job))
    }
}
