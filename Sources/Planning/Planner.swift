import Foundation
import Support
import Model
import Keys
import Imaging
import JobFile

/// Enumerates a job's sources as planned sources (found, or replayed from a shard's last plan), each
/// key once, outputs named, collisions rejected; `classifyAll` classifies their items. Streams, keeping
/// only digests of keys and paths; reads file metadata only, never decodes.
package struct Planner {
    package let job: Job
    /// Fingerprints the items it names, and classifies them in `classifyAll`.
    package let classifier: Classifier
    /// How many source keys deduplication remembers exactly before its Bloom filter takes over.
    package var uniqueKeysInMemory = 1_000_000
    /// Whether an output's path has `{key}`: a tenth of a URL list's plan hashes the keys otherwise.
    private let namesKeys: Bool

    /// `vipsVersion` is the libvips this process runs on, but in tests.
    package init(job: Job, vipsVersion: String = VipsRuntime.version) {
        self.job = job
        classifier = Classifier(job: job, vipsVersion: vipsVersion)
        namesKeys = job.outputs.contains { $0.template.namesKey }
    }

    /// Visits every source of the job (of its shard, when it has one) once, in order, with all its
    /// items pending: sources deduplicated, outputs named, escapes rejected (as `JobFileError`).
    /// Collisions are checked at the end, in `OutputCollisions`' bounded memory: two outputs on one
    /// path, or a template naming no source, is the job file's doing (`JobFileError`); two sources
    /// one output would write to one path (`x//a.jpg` and `x/a.jpg`) are what a folder holds, and
    /// `collided` hears of each such item of this shard's, which must not run. A shard names the
    /// whole job's outputs, so a collision with another shard's is seen in every shard.
    ///
    /// With `memory`, a shard whose `SourceInputs` and walked paths are those of its last complete
    /// plan replays that plan's sources (unless `replay` is false) and returns true; otherwise it
    /// records what it visits and walks, sealed only once the job passed the collision check and no
    /// list or walked folder changed while it was read or just before.
    @discardableResult
    package func forEachSource(memory: (any SourceMemory)? = nil, replay: Bool = true, collided: (_ item: String, _ path: String, ItemFailure) throws -> Void = { _, _, _ in },
                               _ visit: (PlannedSource) throws -> Void) throws -> Bool {
        let started = Date().timeIntervalSince1970
        // Only a shard remembers: it is what reads the whole job for a part of it.
        let inputs = memory != nil && job.shard != nil ? SourceInputs(job) : nil
        let sourceStats = FolderStat()
        if let memory, let inputs, replay {
            // The recorded sources, made again by their specs' listings, made once (a glob's fixed part
            // per source was a tenth of a reused 10M glob shard's plan).
            let listings = job.sources.map(\.listing)
            let replayed = try memory.replaySources(madeUnder: inputs.fingerprint, ifEach: { $0.isUnchanged }) { entry in
                guard listings.indices.contains(entry.spec), let discovered = listings[entry.spec].source(at: entry.line) else {
                    throw RememberedSourceMismatch(entry: entry)
                }
                try visit(try planned(discovered, statting: sourceStats))
            }
            if replayed { return true }
        }
        try memory?.forgetSources()
        var outputs = OutputCollisions(spillingInto: spillFolder)
        var latestFolderChange = Int64.min
        let walked: SourceDiscovery.WalkObserver? = inputs == nil ? nil : memory.map { memory in
            { path in
                latestFolderChange = max(latestFolderChange, path.latestChange ?? .min)
                try memory.recordWalked(path)
            }
        }
        try forEachUniqueSource(walked: walked) { discovered, own in
            guard own else {
                for (index, path) in try outputPaths(of: discovered).enumerated() {
                    try outputs.add(path: path, item: itemDigest(discovered.key, index))
                }
                return
            }
            let source = try planned(discovered, statting: sourceStats)
            for item in source.items { try outputs.add(path: item.outputPath, item: itemDigest(source.key, item.outputIndex)) }
            if inputs != nil, let memory, let entry = discovered.entry { try memory.recordSource(entry) }
            try visit(source)
        }
        let suspects = try outputs.suspects()
        // A plan with collisions is not remembered: the next one must find them again.
        let collisions = suspects.isEmpty ? 0 : try confirmCollisions(among: suspects, collided)
        // Every list and walked folder was last changed `FileIdentity.racyWindow` before the plan began.
        if let memory, let inputs, collisions == 0, FileIdentity.settled(max(inputs.latestChange, latestFolderChange), before: started),
           SourceInputs(job) == inputs {
            try memory.sealSources(madeUnder: inputs.fingerprint)
        }
        return false
    }

    /// Where `OutputCollisions` spills: beside the state database once a run has created its folder
    /// (`/tmp` is often a RAM disk), else the temporary folder.
    private var spillFolder: String {
        let folder = Paths.directory(of: job.statePath)
        return access(folder, W_OK) == 0 ? folder : ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    }

    private func itemDigest(_ sourceKey: String, _ output: Int) -> UInt64 {
        var hash = StableHash()
        hash.combine(sourceKey)
        hash.combine(job.outputs[output].name)
        return hash.value
    }

    /// Discovered sources, each key once, and whether each is of this run's shard. One walk or glob
    /// cannot name a file twice, so only jobs with lists or several sources remember keys
    /// (`UniqueSources`), and only their own shard's: a source's repeats all fall in one shard.
    private func forEachUniqueSource(walked: SourceDiscovery.WalkObserver? = nil,
                                     _ visit: (DiscoveredSource, _ own: Bool) throws -> Void) throws {
        let canRepeat = job.sources.count > 1 || job.sources.contains { $0.listing.canNameTwice }
        var unique = UniqueSources(spillingInto: spillFolder, exactLimit: uniqueKeysInMemory)
        try SourceDiscovery.discover(job.sources, walked: walked) { discovered in
            let own = job.shard?.contains(discovered.key) ?? true
            if own && canRepeat { guard try unique.admit(discovered) else { return } }
            try visit(discovered, own)
        }
        try unique.finish { try visit($0, true) }
    }

    /// One source's items as a run would plan them, output paths and all, whether or not the job's
    /// sources find it, and without the state database (`runner preview`).
    package func items(of discovered: DiscoveredSource) throws -> [PlannedItem] {
        try planned(discovered, statting: FolderStat()).items
    }

    private func planned(_ discovered: DiscoveredSource, statting stats: FolderStat) throws -> PlannedSource {
        let identity = discovered.origin.kind.plannedIdentity(statting: stats)
        let items = try outputPaths(of: discovered).enumerated().map { index, outputPath in
            PlannedItem(key: ItemKey.of(source: discovered.key, output: job.outputs[index].name), outputName: job.outputs[index].name, outputIndex: index,
                        outputPath: outputPath, fingerprint: classifier.fingerprint(identity, output: index), status: .pending)
        }
        return PlannedSource(key: discovered.key, origin: discovered.origin, identity: identity, items: items)
    }

    /// Each output's path for `discovered`, in the job's order of outputs; an escape from the
    /// template's root is a `JobFileError`.
    private func outputPaths(of discovered: DiscoveredSource) throws -> [String] {
        let (stem, ext) = Paths.splitExtension(discovered.fileName)
        let key = namesKeys ? PathTemplate.Values.key(of: discovered.key) : ""
        // By index, not by element: a copy of each output per source retains and releases its name,
        // location, block, template, chain and encoder (most of a URL list plan's extra CPU over a62463e).
        return try job.outputs.indices.map { index in
            let template = job.outputs[index].template
            let values = PathTemplate.Values(stem: stem, ext: ext, dir: discovered.relativeDirectory, name: job.outputs[index].name, key: key)
            guard let outputPath = template.expand(values) else {
                throw JobFileError("\(job.outputs[index].location).path", "\(discovered.key) would be written outside \(template.root)")
            }
            if let manifest = job.manifest, outputPath == manifest.path || outputPath == job.manifestPath {
                throw JobFileError("manifest.path", "\(discovered.key)'s output \(job.outputs[index].name) would be written at the manifest's path \(outputPath)")
            }
            if template.extensionVaries, let mismatch = extensionMismatch(Paths.lastComponent(outputPath), for: job.outputs[index].encoder) {
                throw JobFileError("\(job.outputs[index].location).path", "\(discovered.key) would be written as \(outputPath): \(mismatch)")
            }
            return outputPath
        }
    }

    /// Tells `collided` of each item of this shard's that writes a path (among `suspects`) another
    /// source's item of the same output writes, and returns how many; throws for two outputs on one
    /// path, or an output naming one path for every source. Discovers again: only for the rare
    /// digest match (almost always a real collision).
    private func confirmCollisions(among suspects: Set<UInt64>, _ collided: (String, String, ItemFailure) throws -> Void) throws -> Int {
        var writers: [String: [(item: String, source: String, own: Bool)]] = [:]
        try forEachUniqueSource { discovered, own in
            for (index, path) in try outputPaths(of: discovered).enumerated() where suspects.contains(StableHash.value(path)) {
                let output = job.outputs[index]
                let key = ItemKey.of(source: discovered.key, output: output.name)
                guard let first = writers[path]?.first, first.item != key else { writers[path] = [(key, discovered.key, own)]; continue }
                if ItemKey.split(first.item).output != output.name || !output.template.namesSource {
                    throw JobFileError("\(output.location).path", "two items would write \(path): \(first.item) and \(key); "
                                       + "add \(Self.tokenTellingApart(first.source, discovered.key)) to the template")
                }
                writers[path]?.append((key, discovered.key, own))
            }
        }
        var count = 0
        for (path, items) in writers where items.count > 1 {
            for item in items where item.own {
                let other = items.first { $0.source != item.source }!
                let fix = "add \(Self.tokenTellingApart(other.source, item.source)) to \(job.outputs.first { $0.name == ItemKey.split(item.item).output }!.location).path"
                try collided(item.item, path, ItemFailure(.collision, "\(other.source) would write \(path) too: \(fix)"))
                count += 1
            }
        }
        return count
    }

    /// The path token that tells two sources apart: `{ext}` for one name in two formats
    /// (photo.jpg, photo.heic), `{dir}` for one name in two folders, else `{key}`.
    private static func tokenTellingApart(_ one: String, _ other: String) -> String {
        let (first, second) = (Paths.splitExtension(one), Paths.splitExtension(other))
        if first.stem == second.stem && first.ext != second.ext { return "{ext} (or {key})" }
        // `x//a.jpg` and `x/a.jpg`: `{dir}` is the same folder for both.
        if Paths.normalize(one) == Paths.normalize(other) { return "{key}" }
        if Paths.lastComponent(one) == Paths.lastComponent(other) { return "{dir} (or {key})" }
        return "{dir} or {key}"
    }

    /// Plans every source and classifies its items against `state`, passing each on as it is
    /// classified; returns the counts. Runs and `runner plan` both plan here; `force` finds a
    /// shard's sources again rather than replaying `memory` (`forEachSource`).
    package func classifyAll(state: some PlanningLookup, memory: (any SourceMemory)? = nil, retryFailed: Bool, force: Bool,
                             collided: (_ item: String, _ path: String, ItemFailure) throws -> Void = { _, _, _ in },
                             _ visit: (PlannedSource) throws -> Void) throws -> PlanCounts {
        var counts = PlanCounts()
        let outputStats = FolderStat(folders: job.outputs.count)
        counts.reusedSources = try forEachSource(memory: memory, replay: !force, collided: { key, path, failure in
            counts.collisions += 1
            try collided(key, path, failure)
        }) { found in
            var source = found
            try classifier.classify(&source, state: state, retryFailed: retryFailed, force: force, statting: outputStats)
            counts.add(source)
            try visit(source)
        }
        return counts
    }
}
