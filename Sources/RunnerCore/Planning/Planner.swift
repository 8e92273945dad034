import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the state database says about items finished earlier.
struct LedgerEntry: Sendable {
    let fingerprint: String
    let outputPath: String
}

/// Turns a job into a `Plan`: expands sources, names every output, fingerprints every item and
/// decides from the ledger which are up to date. Reads file metadata only; never decodes.
struct Planner {
    let job: Job
    let vipsVersion: String

    /// Every item of the job, all pending: sources expanded, outputs named, collisions and
    /// escapes rejected. Touches nothing on disk, so a bad job fails before any work.
    func expand() throws -> Plan {
        var seen: Set<String> = []
        var writers: [String: String] = [:]
        var sources: [PlannedSource] = []
        for discovered in try SourceDiscovery.discover(job.sources) where seen.insert(discovered.path).inserted {
            let identity = Self.identity(of: discovered.path)
            let fileName = Paths.lastComponent(discovered.path)
            let (stem, ext) = Paths.splitExtension(fileName)
            let sourceHash = StableHash.hex(discovered.path)
            var items: [PlannedItem] = []
            for (index, output) in job.outputs.enumerated() {
                let values = PathTemplate.Values(stem: stem, ext: ext, dir: discovered.relativeDirectory,
                                                 name: output.name, key: String(sourceHash.prefix(12)))
                guard let outputPath = output.template.expand(values) else {
                    throw JobFileError("outputs[\(index)].path", "\(discovered.path) would be written outside \(output.template.root)")
                }
                let key = "\(discovered.path)@\(output.name)"
                if let other = writers.updateValue(key, forKey: outputPath) {
                    throw JobFileError("outputs[\(index)].path",
                                       "two items would write \(outputPath): \(other) and \(key); add {dir} or {key} to the template")
                }
                let fingerprint = Self.fingerprint(identity, recipe: output.recipe, vipsVersion: vipsVersion)
                items.append(PlannedItem(key: key, outputName: output.name, outputIndex: index,
                                         outputPath: outputPath, fingerprint: fingerprint, status: .pending))
            }
            sources.append(PlannedSource(key: discovered.path, path: discovered.path, identity: identity, items: items))
        }
        return Plan(sources: sources)
    }

    /// Marks items up to date whose recorded fingerprint and output path match and whose output
    /// file still exists. Nothing up to date is decoded or even opened.
    static func markUpToDate(_ plan: Plan, ledger: [String: LedgerEntry]) -> Plan {
        Plan(sources: plan.sources.map { source in
            var source = source
            guard case .success = source.identity else { return source }
            for index in source.items.indices {
                let item = source.items[index]
                if let entry = ledger[item.key], entry.fingerprint == item.fingerprint,
                   entry.outputPath == item.outputPath, access(item.outputPath, F_OK) == 0 {
                    source.items[index].status = .upToDate
                }
            }
            return source
        })
    }

    static func identity(of path: String) -> Result<SourceIdentity, SourceMissing> {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return .failure(SourceMissing(message: "\(path): \(String(cString: strerror(errno)))"))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(SourceMissing(message: "\(path): not a regular file"))
        }
        let nanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return .success(SourceIdentity(size: Int64(info.st_size), modifiedNanoseconds: nanoseconds))
    }

    /// Covers the source's identity, the output's whole recipe (chain, format, load options) and
    /// the versions of runner and libvips: change any of them and the item runs again.
    static func fingerprint(_ identity: Result<SourceIdentity, SourceMissing>, recipe: String, vipsVersion: String) -> String {
        var hash = StableHash()
        switch identity {
        case .success(let identity):
            hash.combine("\(identity.size):\(identity.modifiedNanoseconds)")
        case .failure:
            hash.combine("missing")
        }
        hash.combine(recipe)
        hash.combine(RunnerVersion.string)
        hash.combine(vipsVersion)
        return hash.hex
    }
}
