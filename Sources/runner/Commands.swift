import ArgumentParser
import Foundation
import Support
import Imaging
import JobFile
import Planning
import Reporting
import Pipeline

struct Run: RunnerCommand {
    static let configuration = CommandConfiguration(abstract: "Run a job (the default command).")

    @OptionGroup var job: JobArgument

    @OptionGroup var sharding: ShardOptions

    @Flag(help: "Redo every item, even those up to date.")
    var force = false

    @Option(name: [.customShort("j"), .long], help: "Image worker processes (overrides concurrency.process).")
    var jobs: Int?

    @Flag(help: "Only fetch and revalidate URL sources into the originals cache; process nothing.")
    var downloadOnly = false

    @Flag(help: "Try failed items again: blacklisted URLs, and sources whose content failed to decode before.")
    var retryFailed = false

    @Flag(help: "Exit 1 when any failure is on record, not only when this run recorded a new one.")
    var strict = false

    @Flag(name: .shortAndLong, help: "Print only this run's failures and the summary.")
    var quiet = false

    @Option(help: "Seconds between progress lines (JSON progress events) when not on a terminal.")
    var progressInterval = RunOptions().progressInterval

    @Option(help: ArgumentHelp("Stop handing out work at this local time (24-hour HH:MM, the next one to come); items in flight finish; exit 124.", valueName: "HH:MM"))
    var deadline: String?

    @Option(help: ArgumentHelp("Stop handing out work after this long (90s, 30m, 4h, 1d); items in flight finish; exit 124.", valueName: "duration"))
    var maxDuration: String?

    @Option(help: ArgumentHelp("Write Prometheus metrics (text format) to this file at the end of the run.", valueName: "file"))
    var metrics: String?

    @Option(help: "text or json (one JSON event per line on stdout).")
    var logFormat: LogFormat = .text

    @Flag(name: .shortAndLong, help: "Show libvips' warnings, each distinct one once per source.")
    var verbose = false

    enum LogFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if !(progressInterval > 0) { throw ValidationError("--progress-interval must be more than 0 seconds") }
        if let deadline, Durations.nextOccurrence(of: deadline) == nil {
            throw ValidationError("--deadline must be a time of day as HH:MM (24-hour), not \(Quoted.value(deadline))")
        }
        if let maxDuration, Durations.seconds(maxDuration) == nil {
            throw ValidationError("--max-duration must be a duration such as 90s, 30m, 4h or 1d, not \(Quoted.value(maxDuration))")
        }
        // A run given a count but no index would do the whole job into the unsharded database: the
        // shards' databases would not know its work, and every shard would do it again.
        if let count = sharding.shards, sharding.shard == nil, (try? sharding.resolved()) == nil {
            throw ValidationError("--shards \(count) gives the count but no shard index: add --shard K/\(count), or run where "
                                  + "the batch engine sets JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID")
        }
        // Found before any work rather than after a night's run; a write that still fails then exits 73.
        if let metrics {
            var isFolder: ObjCBool = false
            let folder = Paths.directory(of: Paths.resolve(metrics, against: FileManager.default.currentDirectoryPath))
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError("--metrics: no such folder \(folder)")
            }
        }
    }

    func execute() throws {
        var options = RunOptions()
        (options.force, options.retryFailed, options.workers, options.verbose) = (force, retryFailed, jobs, verbose)
        (options.downloadOnly, options.strict, options.progressInterval, options.metricsPath) = (downloadOnly, strict, progressInterval, metrics)
        // Whichever budget ends first.
        let ends = [deadline.flatMap { Durations.nextOccurrence(of: $0) },
                    maxDuration.flatMap(Durations.seconds).map { Date().addingTimeInterval($0) }]
        options.deadline = ends.compactMap { $0 }.min()
        options.style = logFormat == .json ? .json : quiet ? .quiet : .text
        let summary = try job.with { try JobRunner.run(try sharding.apply(to: $0), options: options) }
        if let failure = summary.failure { Runner.printError(failure.message) }
        throw ExitCode(summary.exitCode)
    }
}

struct Validate: RunnerCommand {
    static let configuration = CommandConfiguration(abstract: "Check a job file and exit: 0 valid, 2 invalid.")

    @OptionGroup var job: JobArgument

    func execute() throws {
        let (loaded, items) = try job.with { job in
            (job, try JobRunner.validate(job) { item, reason in FileHandle.standardError.write(Data("runner: \(item) will fail: \(reason)\n".utf8)) })
        }
        print("\(job.job): valid (\(loaded.outputNames.count) outputs: \(loaded.outputNames.joined(separator: ", ")); \(items) items)")
    }
}

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the JSON Schema of job files, for editors: runner schema > runner.schema.json.")

    @Flag(help: "Print the JSON Schema of the site manifest (the job's manifest key, runner manifest) instead.")
    var manifest = false

    @Flag(help: "Print the JSON Schema of a --log-format json line instead.")
    var events = false

    func validate() throws {
        if manifest && events { throw ValidationError("--manifest and --events name two schemas: give one") }
    }

    func run() throws {
        print(manifest ? SiteManifestSchema.text : events ? RunEventSchema.text : JobSchema.text)
    }
}

struct ManifestCommand: RunnerCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Write the site manifest (every source and output) from the state database alone, without running.")

    @OptionGroup var job: JobArgument

    @Option(help: ArgumentHelp("The file to write, - for stdout (default: the job's manifest.path, else stdout).", valueName: "file"))
    var out: String?

    @Flag(help: "JSON Lines: one source object a line (default: the job's manifest.format, else json).")
    var jsonl = false

    func execute() throws {
        try job.reading { loaded in
            switch try JobRunner.manifest(loaded, out: out, jsonl: jsonl) {
            case .written(let path, let changed): print(changed ? path : "\(path) (unchanged)")
            case .printed: break
            case .neverRun: Runner.printError(notRunYet(loaded.name, state: loaded.stateShownAs))
            }
        }
    }
}

struct Compare: RunnerCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the SSIMULACRA2 score of an image against another (100 identical, 90 visually lossless, 70 high, 50 medium).",
        discussion: "Both are read as a source is (upright, to sRGB) and must be the same size: try a target on your own photos first.")

    @Argument(help: "The original.")
    var reference: String

    @Argument(help: "The images to score against it (encoded outputs); with several, each line is the score and the file.")
    var distorted: [String]

    func validate() throws {
        if distorted.isEmpty { throw ValidationError("give the image to score after the original") }
    }

    func execute() throws {
        try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: false)
        VipsRuntime.keepFreedMemory()
        let scores = try VipsRuntime.onLibvipsThread { Result { try ImageComparison.scores(reference: reference, distorted: distorted) } }.get()
        for (score, file) in zip(scores, distorted) { print(String(format: "%.2f", score) + (distorted.count > 1 ? "\t" + file : "")) }
    }
}

struct Formats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the image formats this build's libvips reads and writes, and runner's output type for each.")

    func run() throws {
        try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: false)
        print("libvips \(VipsRuntime.version); an untrusted loader reads only with limits.blockUntrusted false")
        let rows = [["format", "reads", "writes", "untrusted", "output type"]] + FormatSupport.survey().map { format in
            [format.name, format.reads ? "yes" : "no", format.writes ? "yes" : "no", format.untrusted ? "yes" : "no",
             format.outputType ?? "-"]
        }
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max()! + 2 }
        for row in rows {
            print(zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined()
                .trimmingCharacters(in: .whitespaces))
        }
    }
}

struct PlanCommand: RunnerCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan", abstract: "Show how many items would run, are up to date, or are blocked.")

    @OptionGroup var job: JobArgument

    @OptionGroup var sharding: ShardOptions

    @Flag(help: "List every item with its status.")
    var list = false

    @Flag(help: "Plan as if --force were given.")
    var force = false

    @Flag(help: "Plan as if --retry-failed were given.")
    var retryFailed = false

    @Flag(help: "Print JSON.")
    var json = false

    func execute() throws {
        // Items are printed as they are planned, JSON included, so listing millions stays flat
        // in memory. A job-file error found part way cuts the listing short (exit status 2).
        try job.reading { loaded in
            if let count = sharding.shards, try sharding.resolved() == nil { return try printSpread(try JobRunner.spread(loaded, over: count)) }
            var itemsPrinted = 0
            let line = JSONEncoder.printing(pretty: false)
            if json && list { print("{\n  \"items\" : [", terminator: "") }
            let (counts, orphaned) = try JobRunner.plan(try sharding.apply(to: loaded), force: force, retryFailed: retryFailed) { source in
                guard list else { return }
                for item in source.items {
                    if json {
                        let listed = try line.text(PlanJSON.Item(key: item.key, output: item.outputPath, status: item.status))
                        print((itemsPrinted == 0 ? "\n    " : ",\n    ") + listed, terminator: "")
                    } else {
                        print("\(item.status.rawValue)\t\(item.key)\t\(item.outputPath)")
                    }
                    itemsPrinted += 1
                }
            }
            guard json else {
                return print(counts.described + ", \(orphaned) orphaned" + (orphaned > 0 ? " (runner prune \(job.job) lists them)" : ""))
            }
            let totals = try JSONEncoder.printing().text(PlanJSON(counts: counts, orphaned: orphaned))
            // Listed, the counts continue the object the items opened.
            print(list ? (itemsPrinted == 0 ? "]," : "\n  ],") + totals.dropFirst() : totals)
        }
    }

    /// `--shards N` alone: how the sources spread over N shards.
    private func printSpread(_ sources: [Int]) throws {
        let total = sources.reduce(0, +)
        let mean = Double(total) / Double(sources.count)
        let largest = sources.max() ?? 0
        let excess = mean > 0 ? (Double(largest) / mean - 1) * 100 : 0
        if json { return print(try JSONEncoder.printing().text(Spread(sources: total, shards: sources, largestOverMeanPercent: excess))) }
        print("\(total) sources over \(sources.count) shards: " + String(format: "mean %.1f, largest %d (%.1f%% over the mean)", mean, largest, excess))
        for (index, count) in sources.enumerated() { print("shard \(index)/\(sources.count)\t\(count)") }
    }
}

/// `runner plan --json`: the counts and the orphaned items, after the items as they are planned
/// with `--list`.
private struct PlanJSON: Encodable {
    struct Item: Encodable {
        let key, output: String
        let status: PlannedItem.Status
    }

    let counts: PlanCounts
    let orphaned: Int

    func encode(to encoder: any Encoder) throws {
        try counts.encode(to: encoder)
        try ["orphaned": orphaned].encode(to: encoder)
    }
}

/// `runner plan --shards N --json`: how the sources spread over N shards.
private struct Spread: Encodable {
    let sources: Int
    let shards: [Int]
    let largestOverMeanPercent: Double
}

struct Status: RunnerCommand {
    static let configuration = CommandConfiguration(abstract: "Item counts by state and the last runs.")

    @OptionGroup var job: JobArgument

    @Flag(help: "Print JSON.")
    var json = false

    @Option(help: "How many recent runs to show.")
    var runs = 5

    func execute() throws {
        let report = try job.reading { try StatusReport(job: $0, runs: runs) }
        print(json ? try JSONEncoder.printing().text(report) : report.text())
    }
}

struct Failed: RunnerCommand {
    static let configuration = CommandConfiguration(abstract: "Each failed item with its reason.")

    @OptionGroup var job: JobArgument

    @Flag(help: "Print JSON.")
    var json = false

    func execute() throws {
        try job.reading { loaded in try FailedReport.write(loaded, json: json) { print($0, terminator: "") } }
    }
}

struct Report: RunnerCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an HTML report: the runs, their throughput, failures and a contact sheet of outputs.")

    @OptionGroup var job: JobArgument

    @Option(help: ArgumentHelp("The report's first page (default: STATE-report.html beside the state database STATE.sqlite).", valueName: "file"))
    var out: String?

    @Option(help: "How many recent runs to show.")
    var runs = 15

    @Option(help: "Most pages of outputs; a bigger job is sampled evenly.")
    var pages = 20

    @Option(help: "Outputs per page (at most 500).")
    var perPage = HTMLReport.maxPerPage

    func validate() throws {
        if runs < 1 || pages < 1 { throw ValidationError("--runs and --pages must be at least 1") }
        if !(1...HTMLReport.maxPerPage).contains(perPage) { throw ValidationError("--per-page must be from 1 to \(HTMLReport.maxPerPage)") }
    }

    func execute() throws {
        var options = HTMLReport.Options()
        (options.out, options.runs, options.pages, options.perPage) = (out, runs, pages, perPage)
        try job.reading { loaded in
            switch try JobRunner.report(loaded, options: options) {
            case .written(let pages): print(pages[0])
            case .neverRun: print("\(loaded.name) has not run yet: no report written")
            }
        }
    }
}

struct PreviewCommand: RunnerCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Render one file or URL through the job's outputs into a scratch folder; touches no state, cache or output of the job.")

    @OptionGroup var job: JobArgument

    @Argument(help: ArgumentHelp("The image: a file (relative to the current folder) or an http(s) URL.", valueName: "file-or-url"))
    var source: String

    @Option(help: ArgumentHelp("The folder to write into (default: a new temporary folder).", valueName: "dir"))
    var out: String?

    @Option(help: ArgumentHelp("Only this output (default: every output).", valueName: "name"))
    var output: String?

    @Flag(name: .shortAndLong, help: "Show libvips warnings from the worker.")
    var verbose = false

    func execute() throws {
        let loaded = try job.load()
        let folder = try out.map { Paths.resolve($0, against: FileManager.default.currentDirectoryPath) } ?? Preview.temporaryFolder()
        let rendered = try Preview.render(loaded, source: source, output: output, into: folder, verbose: verbose)
        print(folder)
        let nameWidth = rendered.map(\.output.count).max() ?? 0
        for file in rendered {
            let name = file.output.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            let time = String(format: "%.3f s", file.seconds)
            switch file.result {
            case .success where file.skipped != nil:
                print("\(name)  skipped: \(file.skipped ?? "")")
            case .success(let image):
                let quality = file.quality.map { "  " + $0.summary } ?? ""
                print("\(name)  \(Paths.lastComponent(file.path))  \(image.width)x\(image.height)  \(Format.bytes(image.bytes))  \(time)\(quality)")
            case .failure(let failure):
                print("\(name)  failed (\(failure.kind.rawValue)), \(time)")
                Runner.printError("\(file.output): \(failure)")
            }
        }
        if rendered.contains(where: { if case .failure = $0.result { true } else { false } }) {
            throw ExitCode(ExitStatus.someItemsFailed)
        }
    }
}

struct Duplicates: RunnerCommand {
    static let configuration = CommandConfiguration(
        abstract: "Groups of sources that are near duplicates (dHash within --distance bits) or exact ones (the same bytes).")

    @OptionGroup var job: JobArgument

    @Option(help: "Most dHash bits two near duplicates differ in (0-63).")
    var distance = DHash.duplicateDistance

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if !(0...63).contains(distance) { throw ValidationError("--distance must be from 0 to 63 bits") }
    }

    func execute() throws {
        try job.reading { loaded in
            let report = try DuplicatesReport(job: loaded, distance: distance)
            guard report.hasRun else { return print(notRunYet(loaded.name, state: loaded.stateShownAs)) }
            print(json ? try JSONEncoder.printing().text(report) : report.text())
        }
    }
}

struct Unblock: RunnerCommand {
    static let configuration = CommandConfiguration(abstract: "Take URLs off the job's failed-URL blacklist.")

    @OptionGroup var job: JobArgument

    @Argument(help: "The URLs to unblock.")
    var urls: [String] = []

    @Flag(help: "Unblock every URL.")
    var all = false

    func validate() throws {
        if all == !urls.isEmpty { throw ValidationError("name the URLs to unblock, or give --all") }
    }

    func execute() throws {
        let removed = try job.editing { try JobRunner.unblock($0, urls: all ? nil : urls).count }
        print("\(Format.plural(removed, "URL")) unblocked")
    }
}

struct Migrate: RunnerCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upgrade the job's state databases to this runner's schema, as its next run would, and run nothing.")

    @OptionGroup var job: JobArgument

    func execute() throws {
        for path in try job.editing({ try JobRunner.migrate($0) }) { print("\(path): up to date with runner \(RunnerVersion.string)") }
    }
}

struct Prune: RunnerCommand {
    static let configuration = CommandConfiguration(
        abstract: "List (and with --delete remove) outputs whose source is gone, whose path changed, or whose output left the job.")

    @OptionGroup var job: JobArgument

    @Flag(help: "Delete the orphaned outputs runner wrote, and drop their items from the state database.")
    var delete = false

    func execute() throws {
        try (delete ? job.editing : job.reading) { loaded in
            // One line per orphan as it is found: WHAT<tab>KEY<tab>PATH[<tab>why the file stays];
            // then one per orphaned source record: drop/dropped<tab>SOURCE KEY. With a manifest, an
            // orphan's file is retired: kept for keepReplaced once the manifest drops it.
            let gone = loaded.manifest == nil ? "deleted" : "retired"
            let counts = try JobRunner.prune(loaded, delete: delete, { orphan in
                let what = orphan.keptBecause == nil ? (delete ? gone : "delete") : (delete ? "kept" : "keep")
                print([what, orphan.key, orphan.outputPath].joined(separator: "\t") + (orphan.keptBecause.map { "\t\($0)" } ?? ""))
            }, visitSource: { key in print((delete ? "dropped" : "drop") + "\t" + key) }, visitRetired: { retired in
                // A replaced file: deleted (or to delete) once past keepReplaced, else kept until then.
                let when = retired.removableAfter.map { "replaced; kept until \(Date.ISO8601FormatStyle().format($0))" }
                    ?? "replaced; kept until keepReplaced after the next manifest"
                let what = retired.due ? (delete ? "deleted" : "delete") : (delete ? "kept" : "keep")
                print([what, retired.item, retired.path, retired.due ? "replaced; past keepReplaced" : when].joined(separator: "\t"))
            })
            guard let counts else { return print(notRunYet(loaded.name, state: loaded.stateShownAs)) }
            let items = Format.plural(delete ? counts.orphans - counts.failed : counts.orphans, "orphaned item")
            let files = Format.plural(counts.files, "file")
            let sources = counts.sources == 0 ? "" : ", \(Format.plural(counts.sources, "orphaned source record"))" + (delete ? " dropped" : "")
            let retired = counts.retired == 0 ? ""
                : ", \(Format.plural(counts.retired, "replaced file")) kept (\(counts.retiredDue) past keepReplaced)"
            let failures = counts.failed > 0 ? "; \(counts.failed) could not be deleted" : ""
            let pending = !delete && counts.orphans + counts.sources + counts.retiredDue > 0 ? " (runner prune \(job.job) --delete)" : ""
            print((delete ? "\(items) dropped, \(files) \(gone)" : "\(items), \(files) to delete") + sources + retired + failures + pending)
            if counts.failed > 0 { throw ExitCode(ExitStatus.someItemsFailed) }
        }
    }
}

struct Worker: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Internal: an image worker process, fed by the supervisor over pipes.", shouldDisplay: false)

    func run() throws {
        throw ExitCode(WorkerMain.run())
    }
}
