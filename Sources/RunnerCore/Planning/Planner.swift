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

    func plan(ledger: [String: LedgerEntry], force: Bool) throws -> Plan {
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
                var status = PlannedItem.Status.pending
                if !force, case .success = identity, let entry = ledger[key], entry.fingerprint == fingerprint,
                   entry.outputPath == outputPath, access(outputPath, F_OK) == 0 {
                    status = .upToDate
                }
                items.append(PlannedItem(key: key, outputName: output.name, outputIndex: index,
                                         outputPath: outputPath, fingerprint: fingerprint, status: status))
            }
            sources.append(PlannedSource(key: discovered.path, path: discovered.path, identity: identity, items: items))
        }
        return Plan(sources: sources)
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
