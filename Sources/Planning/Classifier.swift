import Foundation
import Support
import Model
import JobFile

/// What the state database says of an item finished earlier: done, skipped (a narrower output holds
/// its bytes), or failed for a reason its content decides under the limits `failedUnder`.
package struct LedgerEntry: Sendable, Codable {
    package let fingerprint: String
    package let outputPath: String
    package var skipped = false
    package var failureKind: ItemFailure.Kind? = nil
    package var failedUnder: String? = nil
    /// How a done output with a quality target got its quality.
    package var quality: QualityOutcome? = nil

    package init(fingerprint: String, outputPath: String, skipped: Bool = false, failureKind: ItemFailure.Kind? = nil, failedUnder: String? = nil,
                 quality: QualityOutcome? = nil) {
        (self.fingerprint, self.outputPath, self.skipped) = (fingerprint, outputPath, skipped)
        (self.failureKind, self.failedUnder, self.quality) = (failureKind, failedUnder, quality)
    }
}

/// The recorded state that decides whether an item runs, looked up one key at a time so a plan
/// never holds the whole ledger: `StateStore.PlanningPass` reads the database, `PlanningState` memory.
package protocol PlanningLookup {
    /// The item's entry if it was recorded done, or failed for a reason its content decides.
    func recorded(_ itemKey: String) throws -> LedgerEntry?
    func original(_ sourceKey: String) throws -> CachedOriginal?
    func blacklistEntry(_ url: String) throws -> BlacklistEntry?
    /// What is stored of the source's derived values (asked only of jobs that `derive`).
    func derivedLedger(_ sourceKey: String) throws -> DerivedLedger
}

package struct PlanningState: PlanningLookup, Sendable {
    package var ledger: [String: LedgerEntry] = [:]
    package var originals: [String: CachedOriginal] = [:]
    package var blacklist: [String: BlacklistEntry] = [:]
    package var derived: [String: DerivedLedger] = [:]

    package init(ledger: [String: LedgerEntry] = [:], originals: [String: CachedOriginal] = [:], blacklist: [String: BlacklistEntry] = [:],
                 derived: [String: DerivedLedger] = [:]) {
        (self.ledger, self.originals, self.blacklist, self.derived) = (ledger, originals, blacklist, derived)
    }

    package func recorded(_ itemKey: String) -> LedgerEntry? { ledger[itemKey] }
    package func original(_ sourceKey: String) -> CachedOriginal? { originals[sourceKey] }
    package func blacklistEntry(_ url: String) -> BlacklistEntry? { blacklist[url] }
    package func derivedLedger(_ sourceKey: String) -> DerivedLedger { derived[sourceKey] ?? DerivedLedger() }
}

/// Decides from the recorded state what each planned item needs (up to date, a known failure,
/// blocked, to revalidate, or to run) and which derived values its source needs, by the fingerprints it owns.
package struct Classifier: Sendable {
    package let job: Job
    package let vipsVersion: String
    /// Each output's recipe and the versions, hashed once rather than once per item.
    private let outputDigests: [String]
    /// The limits a content-decided failure was recorded under (`Limits.identifier`, with each
    /// output's own frame limit): a failure stands only while they are the same.
    package let limitsDigest: String

    package init(job: Job, vipsVersion: String) {
        (self.job, self.vipsVersion) = (job, vipsVersion)
        outputDigests = job.outputs.map { StableHash.hex($0.recipe, RunnerVersion.string, vipsVersion) }
        limitsDigest = StableHash.hex(job.limits.identifier, job.outputs.map { $0.frames.map(String.init) ?? "-" }.joined(separator: ","))
    }

    /// Marks items up to date whose recorded fingerprint and output path match and whose output
    /// still exists (or was skipped), items that failed before on the same content known failures
    /// (unless `retryFailed`), and items of blacklisted sources blocked; decodes and downloads nothing.
    /// A fetched source whose cached original must be revalidated is left to the download stage
    /// (items made from that original are marked `revalidate`). `outputStats` is held per pass, so a
    /// folder of outputs is walked once.
    package func classify(_ source: inout PlannedSource, state: some PlanningLookup, retryFailed: Bool, force: Bool = false,
                  now: Double = Date().timeIntervalSince1970, statting outputStats: FolderStat = FolderStat()) throws {
        if let fetched = source.kind.fetched {
            if !retryFailed, let entry = try state.blacklistEntry(fetched.location), !isExpired(entry, now: now) {
                // Written again since it was blacklisted (a corrupt photo replaced): tried, and unblocked if it loads.
                if let changed = fetched.changedAt, changed > entry.lastSeen {
                    source.retriesBlacklisted = true
                } else {
                    source.blockedReason = "blacklisted since \(ISO8601DateFormatter().string(from: entry.firstSeen)): \(entry.message)"
                    for index in source.items.indices { source.items[index].status = .blocked }
                    return
                }
            }
            source.cachedOriginal = try state.original(source.key)
            // Where planning knows nothing of the content (a URL's), a fresh cached original says.
            if case .unknown = source.identity, let original = source.cachedOriginal, !needsRevalidation(original, now: now) {
                source.identity = fetched.identity(of: original)
                for index in source.items.indices {
                    source.items[index].fingerprint = fingerprint(source.identity, output: source.items[index].outputIndex)
                }
            }
        }
        try planDerivation(&source, state: state, force: force)
        for index in source.items.indices {
            guard let entry = try state.recorded(source.items[index].key) else { continue }
            source.items[index].rememberQuality(entry)
            if force { continue }
            // A failure does not depend on where the output goes, but on the limits; a done item's output does.
            let stands = if let kind = entry.failureKind {
                source.identity.decides(kind) && !retryFailed && entry.failedUnder == limitsDigest
            } else {
                entry.outputPath == source.items[index].outputPath
                    || job.outputs[source.items[index].outputIndex].template.planned(from: entry.outputPath) == source.items[index].outputPath
            }
            if stands { source.items[index].recorded = entry }
        }
        switch source.identity {
        case .file, .content, .etag, .notRegular: break
        case .unknown:
            // A stale cached original: the items made from it stand if the server finds it unchanged.
            guard let cached = source.cachedIdentity else { return }
            for index in source.items.indices {
                var fromCache = source.items[index]
                fromCache.fingerprint = fingerprint(cached, output: fromCache.outputIndex)
                if fromCache.isUpToDate(in: job.outputs[fromCache.outputIndex].destination, statting: outputStats) { source.items[index].status = .revalidate }
            }
            return
        case .missing: return
        }
        for index in source.items.indices {
            if source.items[index].isUpToDate(in: job.outputs[source.items[index].outputIndex].destination, statting: outputStats) {
                source.items[index].status = .upToDate
            } else if source.items[index].isKnownFailure {
                source.items[index].status = .knownFailure
            }
        }
        // Content every output already failed on is not decoded again for its values.
        if !source.items.isEmpty && source.items.allSatisfy({ $0.status == .knownFailure }) { source.derivation = nil }
    }

    /// The derived values not stored under the source's content fingerprint (all with `force`); a URL
    /// not downloaded yet is planned from its cached original, and decided again once downloaded.
    private func planDerivation(_ source: inout PlannedSource, state: some PlanningLookup, force: Bool) throws {
        guard !job.derive.values.isEmpty else { return }
        source.derivedLedger = force ? DerivedLedger() : try state.derivedLedger(source.key)
        let identity = source.identity == .unknown ? source.cachedIdentity ?? .unknown : source.identity
        source.derivation = derivation(of: source, identity: identity)
    }

    /// The derived values `source` needs once its content is `identity`, or nil when none.
    package func derivation(of source: PlannedSource, identity: SourceIdentity) -> PlannedDerivation? {
        guard !job.derive.values.isEmpty else { return nil }
        switch identity {
        case .missing, .notRegular: return nil
        case .file, .content, .etag, .unknown: break
        }
        let fingerprint = derivationFingerprint(identity)
        let ledger = source.derivedLedger
        let values = job.derive.values.indices.filter { ledger.values[job.derive.values[$0].identifier] != fingerprint }
        guard !values.isEmpty else { return nil }
        var contentHash: String? = ledger.contentHashFingerprint == fingerprint ? ledger.contentHash : nil
        if case .content(let digest) = identity { contentHash = digest }
        return PlannedDerivation(values: values, fingerprint: fingerprint, contentHash: contentHash)
    }

    /// What a source's derived values are keyed by besides their identifiers: its content and the libvips that decoded it.
    package func derivationFingerprint(_ identity: SourceIdentity) -> String {
        StableHash.hex(Self.identityText(identity), vipsVersion)
    }

    private func isExpired(_ entry: BlacklistEntry, now: Double) -> Bool {
        job.remote.blacklistTTL.map { entry.lastSeen.timeIntervalSince1970 + $0 < now } ?? false
    }

    private func needsRevalidation(_ original: CachedOriginal, now: Double) -> Bool {
        switch job.remote.revalidate {
        case .always: true
        case .never: false
        case .after(let seconds): original.validatedAt + seconds < now
        }
    }

    /// The source's identity, the output's whole recipe and the versions of runner and libvips: change any and the item runs again.
    package func fingerprint(_ identity: SourceIdentity, output: Int) -> String {
        // Not StableHash.hex: its variadic array is an allocation per item on the plan's hot path.
        var hash = StableHash()
        hash.combine(Self.identityText(identity))
        hash.combine(outputDigests[output])
        return hash.hex
    }

    private static func identityText(_ identity: SourceIdentity) -> String {
        switch identity {
        case .file(let size, let modified): "file:\(size):\(modified)"
        case .content(let digest): "content:\(digest)"
        case .etag(let etag): "etag:\(etag)"
        case .unknown: "unknown"
        case .missing: "missing"
        case .notRegular(let type, _): "not-regular:\(type)"
        }
    }
}
