import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the state database says about items finished earlier.
struct LedgerEntry: Sendable {
    let fingerprint: String
    let outputPath: String
}

/// What the state database knows that decides whether an item runs.
struct PlanningState: Sendable {
    var ledger: [String: LedgerEntry] = [:]
    var originals: [String: CachedOriginal] = [:]
    var blacklist: [String: BlacklistEntry] = [:]
}

/// Turns a job into a `Plan`: expands sources, names every output, fingerprints every item and
/// decides from the recorded state which are up to date or blocked. Reads file metadata only; never decodes.
struct Planner {
    let job: Job
    let vipsVersion: String
    /// Each output's recipe and the versions, hashed once rather than once per item.
    private let outputDigests: [String]

    init(job: Job, vipsVersion: String) {
        self.job = job
        self.vipsVersion = vipsVersion
        outputDigests = job.outputs.map { StableHash.hex($0.recipe, RunnerVersion.string, vipsVersion) }
    }

    /// Every item of the job, all pending: sources expanded, outputs named, collisions and
    /// escapes rejected. Touches nothing on disk, so a bad job fails before any work.
    func expand() throws -> Plan {
        let discoveredSources = try SourceDiscovery.discover(job.sources)
        var seen: Set<String> = []
        var writers: [String: String] = [:]
        var sources: [PlannedSource] = []
        seen.reserveCapacity(discoveredSources.count)
        writers.reserveCapacity(discoveredSources.count * job.outputs.count)
        sources.reserveCapacity(discoveredSources.count)
        for discovered in discoveredSources where seen.insert(discovered.key).inserted {
            let identity: Result<SourceIdentity, SourceMissing>
            switch discovered.origin {
            case .file(let path): identity = Self.identity(of: path)
            case .remote: identity = .success(.unknown)
            }
            let (stem, ext) = Paths.splitExtension(discovered.fileName)
            let sourceHash = StableHash.hex(discovered.key)
            var items: [PlannedItem] = []
            for (index, output) in job.outputs.enumerated() {
                let values = PathTemplate.Values(stem: stem, ext: ext, dir: discovered.relativeDirectory,
                                                 name: output.name, key: String(sourceHash.prefix(12)))
                guard let outputPath = output.template.expand(values) else {
                    throw JobFileError("outputs[\(index)].path", "\(discovered.key) would be written outside \(output.template.root)")
                }
                let key = "\(discovered.key)@\(output.name)"
                if let other = writers.updateValue(key, forKey: outputPath) {
                    throw JobFileError("outputs[\(index)].path",
                                       "two items would write \(outputPath): \(other) and \(key); add {dir} or {key} to the template")
                }
                items.append(PlannedItem(key: key, outputName: output.name, outputIndex: index, outputPath: outputPath,
                                         fingerprint: fingerprint(identity, output: index), status: .pending))
            }
            sources.append(PlannedSource(key: discovered.key, origin: discovered.origin, identity: identity, items: items))
        }
        return Plan(sources: sources)
    }

    /// Marks items up to date whose recorded fingerprint and output path match and whose output
    /// file still exists, and items of blacklisted URLs blocked. Nothing is decoded or downloaded.
    /// A URL's items are up to date here only when its cached original need not be revalidated.
    func classify(_ plan: Plan, state: PlanningState, retryFailed: Bool, now: Double = Date().timeIntervalSince1970) -> Plan {
        var plan = plan
        // Mutated in place: copying each source out and back would copy its items too.
        for sourceIndex in plan.sources.indices {
            if case .remote(let remote) = plan.sources[sourceIndex].origin {
                if !retryFailed, let entry = state.blacklist[remote.url], !isExpired(entry, now: now) {
                    for index in plan.sources[sourceIndex].items.indices { plan.sources[sourceIndex].items[index].status = .blocked }
                    continue
                }
                guard let original = state.originals[plan.sources[sourceIndex].key], !needsRevalidation(original, now: now) else { continue }
                let identity = Result<SourceIdentity, SourceMissing>.success(.content(original.contentHash))
                plan.sources[sourceIndex].identity = identity
                for index in plan.sources[sourceIndex].items.indices {
                    let output = plan.sources[sourceIndex].items[index].outputIndex
                    plan.sources[sourceIndex].items[index].fingerprint = fingerprint(identity, output: output)
                }
            }
            guard case .success(let identity) = plan.sources[sourceIndex].identity, identity != .unknown else { continue }
            for index in plan.sources[sourceIndex].items.indices where isUpToDate(plan.sources[sourceIndex].items[index], ledger: state.ledger) {
                plan.sources[sourceIndex].items[index].status = .upToDate
            }
        }
        return plan
    }

    func isUpToDate(_ item: PlannedItem, ledger: [String: LedgerEntry]) -> Bool {
        guard let entry = ledger[item.key] else { return false }
        return entry.fingerprint == item.fingerprint && entry.outputPath == item.outputPath && access(item.outputPath, F_OK) == 0
    }

    private func isExpired(_ entry: BlacklistEntry, now: Double) -> Bool {
        guard let ttl = job.remote.blacklistTTL else { return false }
        return entry.lastSeen.timeIntervalSince1970 + ttl < now
    }

    private func needsRevalidation(_ original: CachedOriginal, now: Double) -> Bool {
        switch job.remote.revalidate {
        case .always: true
        case .never: false
        case .after(let seconds): original.validatedAt + seconds < now
        }
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
        return .success(.file(size: Int64(info.st_size), modifiedNanoseconds: nanoseconds))
    }

    /// Covers the source's identity, the output's whole recipe (chain, format, load options) and
    /// the versions of runner and libvips: change any of them and the item runs again.
    func fingerprint(_ identity: Result<SourceIdentity, SourceMissing>, output: Int) -> String {
        var hash = StableHash()
        switch identity {
        case .success(.file(let size, let modified)): hash.combine("file:\(size):\(modified)")
        case .success(.content(let digest)): hash.combine("content:\(digest)")
        case .success(.unknown): hash.combine("unknown")
        case .failure: hash.combine("missing")
        }
        hash.combine(outputDigests[output])
        return hash.hex
    }
}
