import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Imaging
import JobFile
import State

/// `runner report`: one self-contained HTML file (inline CSS and SVG, nothing fetched) with the items
/// by state, runs and throughput, failures, warnings and the blacklist, then a contact sheet of outputs
/// over further pages (`thumbs-report-2.html`, …), sampled evenly past `pages`. Bounded queries and a
/// cursor keep a job of millions of items to one page of HTML in memory; every list is capped.
public struct HTMLReport {
    public static let maxPerPage = 500
    /// Sources shown per failure kind (each a card), and rows of warnings and blacklisted URLs;
    /// `runner failed` lists every one.
    package static let failureLimit = 25, listLimit = 100

    public struct Options: Sendable {
        /// The first page; nil: `defaultPath(for:)`.
        public var out: String?
        /// Runs in the table and the chart.
        public var runs = 15
        /// Most pages of outputs; a bigger job is sampled.
        public var pages = 20
        public var perPage = HTMLReport.maxPerPage
        public init() {}
    }

    public enum Outcome: Sendable {
        /// The pages written, the first (the report) first.
        case written([String])
        /// No run on record: nothing written, no database created.
        case neverRun
    }

    package let job: Job
    package let options: Options
    package let now = Date()

    package init(job: Job, options: Options) { (self.job, self.options) = (job, options) }

    /// Beside the state database, named after it (`state/thumbs.sqlite` -> `state/thumbs-report.html`):
    /// jobs sharing a state folder never replace, or remove as stale, each other's pages.
    package static func defaultPath(for job: Job) -> String {
        let state = job.stateHomePath
        return Paths.directory(of: state) + "/" + Paths.splitExtension(Paths.lastComponent(state)).stem + "-report.html"
    }

    /// `maker` makes the contact sheet's previews (`SheetPreviews`) in worker processes.
    package func write(previews maker: @escaping SheetPreviews.Maker) throws -> Outcome {
        // The runs, each with its shard, and the shards: as `runner status` tells them.
        let databases = try JobDatabases(job: job, runs: options.runs)
        defer { databases.close() }
        let status = try StatusReport(databases, job: job, runs: options.runs)
        guard status.hasRun, !status.runs.isEmpty else { return .neverRun }
        // A sharded job reads as one: its shards' figures summed, their listings merged.
        let stores = databases.stores

        let first = Paths.resolve(options.out ?? Self.defaultPath(for: job), against: FileManager.default.currentDirectoryPath)
        let folder = Paths.directory(of: first)
        let (stem, ext) = Paths.splitExtension(Paths.lastComponent(first))
        func pagePath(_ page: Int) -> String {
            page == 1 ? first : folder + "/" + stem + "-\(page)" + (ext.isEmpty ? "" : "." + ext)
        }

        let perPage = min(max(options.perPage, 1), Self.maxPerPage)
        let capacity = max(options.pages, 1) * perPage
        let total = try stores.sheetItemCount()
        let stride = max(1, (total + capacity - 1) / capacity)
        let shown = min(capacity, (total + stride - 1) / stride)
        let pageCount = max(1, (shown + perPage - 1) / perPage)
        let sheet = Sheet(total: total, shown: shown, stride: stride, pageCount: pageCount,
                          names: (1...pageCount).map { Paths.lastComponent(pagePath($0)) })

        let previews = SheetPreviews(reportPath: first, maker: maker)
        let summary = try summarySections(stores, status: status, folder: folder)
            + duplicatesSection(databases, previews: previews, folder: folder)
        var staged: [AtomicFile.Staged] = []
        var onPage: [ItemRecord] = []
        func flush() throws {
            let page = staged.count + 1
            let tiles = sheetTiles(onPage, previews: previews, folder: folder, derived: stores)
            let html = document(page: page, sheet: sheet, body: (page == 1 ? summary : "") + sheet.section(page: page, tiles: tiles))
            staged.append(try AtomicFile.stage(Data(html.utf8), for: pagePath(page), owner: getpid()))
            onPage = []
        }
        do {
            try stores.forEachSheetItem(stride: stride, limit: shown) { item in
                onPage.append(item)
                if onPage.count == perPage { try flush() }
            }
            if !onPage.isEmpty || staged.isEmpty { try flush() }
        } catch {
            for page in staged { unlink(page.temporary) }
            previews.discard()
            throw error
        }
        // Published together, after their previews, so the pages always link to each other consistently.
        if let failure = AtomicFile.publish(previews.staged + staged).compactMap({ $0 }).first { throw failure }
        previews.removeUnused()
        // Pages of an earlier, longer report would otherwise linger unlinked.
        var stale = staged.count + 1
        while unlink(pagePath(stale)) == 0 { stale += 1 }
        return .written(staged.map(\.path))
    }

    // MARK: Page 1: the job, its runs, what went wrong

    private func summarySections(_ stores: [StateStore], status: StatusReport, folder: String) throws -> String {
        let (counts, warningCount) = (status.items, status.warnings)
        var html = "<section id=\"items\"><div class=\"cards\">"
        for state in ItemState.allCases where counts[state] != nil || [.done, .failed].contains(state) {
            html += card(id: state.rawValue, state.rawValue, counts[state] ?? 0)
        }
        html += card(id: "warnings", "with warnings", warningCount)
        if status.notRevalidated > 0 { html += card(id: "not-revalidated", "sources not revalidated (origin failing)", status.notRevalidated) }
        html += "</div>"
        if status.qualityTargets.outputs > 0 {
            html += "<p id=\"quality-targets\">Quality targets: \(esc(status.qualityTargets.description)).</p>"
        }
        html += "</section>"

        html += runsSection(status.runs, sharded: !status.shards.isEmpty) + shardsSection(status.shards)

        let kinds = try stores.failureKinds().sorted { ($0.count, $1.kind.rawValue) > ($1.count, $0.kind.rawValue) }
        if !kinds.isEmpty {
            html += "<section id=\"failures\"><h2>Failures</h2>"
            for kind in kinds {
                html += "<div class=\"kind\" data-kind=\"\(esc(kind.kind.rawValue))\"><h3><span class=\"pill bad\">\(esc(kind.kind.rawValue))</span> "
                    + "\(Format.plural(kind.count, "item", grouped: true)) <span class=\"muted\">since \(timeTag(kind.since))</span></h3>"
                let items = try collect { try stores.forEachFailedItem(kind: kind.kind, limit: Self.failureLimit, $0) }
                html += "<ul class=\"failures\">" + Self.bySource(items).map { failure($0.item, outputs: $0.outputs, folder: folder) }.joined()
                    + "</ul>"
                html += more(kind.count - items.count)
            }
            html += "</section>"
        }

        if warningCount > 0 {
            let warned = try collect { try stores.forEachWarnedItem(limit: Self.listLimit, $0) }
            html += "<section id=\"warnings\"><h2>Warnings</h2><p class=\"muted\">Done, but with something to say.</p>"
                + "<table><thead><tr><th>source</th><th>output</th><th>warning</th></tr></thead><tbody>"
                + warned.map { "<tr class=\"warning\"><td>\(sourceName($0.source))</td><td>\(esc($0.output))</td><td>\(esc($0.warning))</td></tr>" }.joined()
                + "</tbody></table>" + more(warningCount - warned.count) + "</section>"
        }

        let blockedCount = try stores.blockedURLCount()
        if blockedCount > 0 {
            let blocked = try collect { try stores.forEachBlockedURL(limit: Self.listLimit, $0) }
            html += "<section id=\"blacklist\"><h2>Blacklisted URLs</h2><p class=\"muted\">Skipped without a request until "
                + "<code>runner unblock</code>, <code>--retry-failed</code> or <code>blacklist.ttl</code>.</p>"
                + "<table><thead><tr><th>URL</th><th>kind</th><th>message</th><th>since</th><th class=\"num\">seen</th></tr></thead><tbody>"
                + blocked.map { entry in
                    "<tr class=\"blocked\"><td class=\"url\">\(esc(entry.url))</td><td>\(esc(entry.kind.description))</td><td>\(esc(entry.message))</td>"
                        + "<td>\(timeTag(entry.firstSeen))</td><td class=\"num\">\(Format.count(entry.count))×</td></tr>"
                }.joined()
                + "</tbody></table>" + more(blockedCount - blocked.count) + "</section>"
        }
        return html
    }

    /// The run history: the throughput chart, then a row per run, newest first by start time, each
    /// with its shard when the job runs as shards (run numbers count per shard).
    private func runsSection(_ runs: [JobRun], sharded: Bool) -> String {
        var html = "<section id=\"runs\"><h2>Runs</h2>" + ThroughputChart.svg(runs.reversed())
        html += "<table class=\"runs\"><thead><tr><th class=\"num\">run</th>" + (sharded ? "<th class=\"num\">shard</th>" : "")
            + "<th>started</th><th class=\"num\">duration</th>"
            + "<th class=\"num\">done</th><th class=\"num\">failed</th><th class=\"num\">up to date</th><th class=\"num\">blocked</th>"
            + "<th class=\"num\">items/s</th><th>outcome</th><th class=\"num\">exit</th><th>libvips</th></tr></thead><tbody>"
        for (run, shard) in runs.map({ ($0.run, $0.shard) }) {
            html += "<tr class=\"run\" data-run=\"\(run.id)\"\(shard.map { " data-shard=\"\(esc($0))\"" } ?? "")><td class=\"num\">#\(run.id)</td>"
                + (sharded ? "<td class=\"num\">\(esc(shard ?? "–"))</td>" : "") + runCells(run) + "<td>\(esc(run.vipsVersion))</td></tr>"
        }
        return html + "</tbody></table></section>"
    }

    /// A run's cells from its start to its exit code.
    private func runCells(_ run: RunRecord) -> String {
        "<td>\(timeTag(run.startedAt))</td><td class=\"num\">\(run.duration.map(Format.duration) ?? "–")</td>"
            + "<td class=\"num\">\(Format.count(run.done))</td>"
            + "<td class=\"num\(run.failed > 0 ? " bad" : "")\">\(Format.count(run.failed))</td>"
            + "<td class=\"num\">\(Format.count(run.upToDate))</td><td class=\"num\">\(Format.count(run.blocked))</td>"
            + "<td class=\"num\">\(run.itemsPerSecond.map(Format.rate) ?? "–")</td>"
            + "<td><span class=\"pill \(Self.tone(exitCode: run.exitCode))\">\(esc(run.outcome.rawValue))</span></td>"
            + "<td class=\"num\">\(run.exitCode.map(String.init) ?? "–")</td>"
    }

    /// A sharded job: a row per shard with its items and its latest run, as `runner status` has them.
    private func shardsSection(_ shards: [StatusReport.ShardStatus]) -> String {
        guard !shards.isEmpty else { return "" }
        var html = "<section id=\"shards\"><h2>Shards</h2><table class=\"shards\"><thead><tr><th class=\"num\">shard</th>"
            + "<th class=\"num\">done</th><th class=\"num\">failed</th><th class=\"num\">other items</th><th>last run</th>"
            + "<th class=\"num\">duration</th><th class=\"num\">items/s</th><th>outcome</th><th class=\"num\">exit</th></tr></thead><tbody>"
        for shard in shards {
            let other = shard.items.filter { ![.done, .failed].contains($0.key) }.values.reduce(0, +)
            let failed = shard.items[.failed] ?? 0
            html += "<tr class=\"shard\" data-shard=\"\(esc(shard.shard))\"><td class=\"num\">\(esc(shard.shard))</td>"
                + "<td class=\"num\">\(Format.count(shard.items[.done] ?? 0))</td>"
                + "<td class=\"num\(failed > 0 ? " bad" : "")\">\(Format.count(failed))</td><td class=\"num\">\(Format.count(other))</td>"
            guard let run = shard.lastRun else {
                html += "<td colspan=\"5\" class=\"muted\">no run</td></tr>"
                continue
            }
            let running = shard.running ? " <span class=\"pill warn\">running now</span>" : ""
            html += "<td>#\(run.id) · \(timeTag(run.startedAt))</td><td class=\"num\">\(run.duration.map(Format.duration) ?? "–")</td>"
                + "<td class=\"num\">\(run.itemsPerSecond.map(Format.rate) ?? "–")</td>"
                + "<td><span class=\"pill \(Self.tone(exitCode: run.exitCode))\">\(esc(run.outcome.rawValue))</span>\(running)</td>"
                + "<td class=\"num\">\(run.exitCode.map(String.init) ?? "–")</td></tr>"
        }
        return html + "</tbody></table></section>"
    }

    private func card(id: String, _ label: String, _ value: Int) -> String {
        "<div class=\"card \(id)\" id=\"count-\(id)\"><span class=\"n\">\(Format.count(value))</span> \(label)</div>"
    }

    private func more(_ hidden: Int) -> String {
        hidden > 0 ? "<p class=\"more\">and \(Format.count(hidden)) more: <code>runner failed \(esc(job.filePath))</code> lists them all.</p>" : ""
    }

    /// The failures of one source's outputs with the same message, as one: the list is by source.
    package static func bySource(_ items: [FailedItemRecord]) -> [(item: FailedItemRecord, outputs: [String])] {
        var groups: [(item: FailedItemRecord, outputs: [String])] = []
        for item in items {
            if let last = groups.last, last.item.source == item.source, last.item.message == item.message {
                groups[groups.count - 1].outputs.append(item.output)
            } else {
                groups.append((item, [item.output]))
            }
        }
        return groups
    }

    /// A failure beside its source, when the source is a local file a browser can show.
    private func failure(_ item: FailedItemRecord, outputs: [String], folder: String) -> String {
        let viewable = item.source.hasPrefix("/") && ImageSignature.format(ofFile: item.source)?.displaysInBrowsers == true
        var html = "<li class=\"failure\(viewable ? "" : " no-source")\" data-source=\"\(esc(item.source))\">"
        if viewable {
            html += "<figure class=\"source\"><img class=\"source\" loading=\"lazy\" src=\"\(esc(href(item.source, from: folder)))\" "
                + "alt=\"\(esc(Paths.lastComponent(item.source)))\"><figcaption>the source as it is</figcaption></figure>"
        }
        return html + "<div class=\"what\"><div class=\"name\">\(sourceName(item.source)) <span class=\"muted\">→ \(esc(outputs.joined(separator: ", ")))</span></div>"
            + "<div class=\"path muted\">\(esc(item.source))</div>"
            + "<pre class=\"message\">\(esc(item.message.isEmpty ? "(no message)" : item.message))</pre>"
            + "<div class=\"muted small\">failing since \(timeTag(item.since)) · \(Format.plural(item.attempts, "attempt"))</div></div></li>"
    }

    // MARK: Duplicates

    /// Groups of duplicate sources (as `runner duplicates` finds them), each group's pictures side by
    /// side, previews over their placeholders as on the contact sheet.
    private func duplicatesSection(_ databases: JobDatabases, previews: SheetPreviews, folder: String) throws -> String {
        guard let dhash = job.derive.values.first(where: { $0 is DHash }) else { return "" }
        let report = try DuplicatesReport(databases, dhash: dhash, job: job)
        let groups = Array((report.exact.map { ("exact", $0) } + report.near.map { ("near", $0) }).prefix(Self.failureLimit))
        var html = "<section id=\"duplicates\"><h2>Duplicates</h2><p class=\"muted\">Among \(Format.count(report.sources)) sources with a dHash: "
            + "\(Format.plural(report.exact.count, "group")) of identical files, \(report.near.count) of near duplicates "
            + "(dHash within \(report.distance) bits; <code>runner duplicates</code> lists them all).</p>"
        let members = groups.map { Array($0.1.sources.prefix(Self.groupLimit)) }
        let shown = previews.previews(for: members.joined().map { $0.location.hasPrefix("/") ? $0.location : nil })
        let records = (try? databases.stores.sourceRecords(of: members.joined().map(\.key))) ?? [:]
        var next = 0
        for ((kind, group), sources) in zip(groups, members) {
            html += "<div class=\"dupes\" data-kind=\"\(kind)\"><h3><span class=\"pill\">\(kind)</span> \(group.sources.count) sources"
                + (kind == "near" ? " <span class=\"muted\">up to \(group.maxDistance) bits apart</span>" : "") + "</h3><div class=\"row\">"
            for member in sources {
                let preview = shown[next]
                next += 1
                let image = preview.map { "<img src=\"\(esc(Self.percentEncoded($0.href)))\" alt=\"\(esc(Paths.lastComponent(member.location)))\">" }
                    ?? "<span class=\"muted\">no preview</span>"
                html += "<figure class=\"tile\" title=\"\(esc(member.location))\"><div class=\"frame\"\(placeholder(records[member.key]))>"
                    + "\(image)</div><figcaption>"
                    + "<div class=\"name\">\(sourceName(member.key))</div><div class=\"size\"><span>\(member.width)×\(member.height)</span>"
                    + "<span>\(Format.bytes(member.bytes))</span></div></figcaption></figure>"
            }
            html += "</div>" + more(group.sources.count - sources.count) + "</div>"
        }
        return html + more(report.exact.count + report.near.count - groups.count) + "</section>"
    }

    /// Pictures shown per duplicate group.
    private static let groupLimit = 8

    // MARK: Contact sheet

    package struct Sheet {
        package let total, shown, stride, pageCount: Int
        package let names: [String]

        package func section(page: Int, tiles: String) -> String {
            var html = "<section id=\"outputs\"><h2>Outputs</h2><p class=\"muted\">"
            if total == 0 {
                html += "No output recorded yet."
            } else if stride == 1 {
                html += "\(Format.plural(total, "item", grouped: true)), failed first, then newest first."
            } else {
                html += "A sample of \(Format.count(shown)): every \(Format.ordinal(stride)) of \(Format.count(total)) items, failed first, then newest first."
            }
            return html + "</p>" + navigation(page: page) + "<div class=\"sheet\">" + tiles + "</div>"
                + navigation(page: page) + "</section>"
        }

        package func navigation(page: Int) -> String {
            guard pageCount > 1 else { return "" }
            var html = "<nav class=\"pages\">"
            html += page > 1 ? "<a rel=\"prev\" href=\"\(esc(href(names[page - 2])))\">← previous</a>" : "<span class=\"off\">← previous</span>"
            for number in 1...pageCount {
                html += number == page ? "<span class=\"current\">\(number)</span>"
                    : "<a href=\"\(esc(href(names[number - 1])))\">\(number)</a>"
            }
            html += page < pageCount ? "<a rel=\"next\" href=\"\(esc(href(names[page])))\">next →</a>" : "<span class=\"off\">next →</span>"
            return html + "</nav>"
        }

        private func href(_ name: String) -> String { HTMLReport.percentEncoded(name) }
    }

    /// A page's tiles, with the previews of their outputs (made now when they are not on disk yet).
    private func sheetTiles(_ items: [ItemRecord], previews: SheetPreviews, folder: String, derived stores: [StateStore]) -> String {
        // An object is shown as recorded, linked at its store, with no preview (it is not fetched).
        let links = items.map { job.destination(of: $0.outputPath)?.link(to: $0.outputPath) }
        let sizes = zip(items, links).map { item, link in
            item.failure != nil ? nil : link != nil ? item.bytes : (try? FileManager.default.attributesOfItem(atPath: item.outputPath))?[.size] as? Int
        }
        let shown = previews.previews(for: items.indices.map { sizes[$0] == nil || links[$0] != nil ? nil : items[$0].outputPath })
        let records = job.derive.values.isEmpty ? [:] : (try? stores.sourceRecords(of: Array(Set(items.map(\.sourceKey))))) ?? [:]
        return items.indices.map { index in
            tile(items[index], size: sizes[index], preview: shown[index], link: links[index], folder: folder, placeholder: placeholder(records[items[index].sourceKey]))
        }.joined()
    }

    /// A tile frame's attributes from its source's derived values: behind the picture what a site shows
    /// while it loads (the ThumbHash as a PNG data URL, over the dominant colour), and data attributes.
    private func placeholder(_ record: DerivedSourceRecord?) -> String {
        guard let record else { return "" }
        var (attributes, backgrounds) = ("", [String]())
        for value in job.derive.values {
            guard case .string(let text)? = record.value(value.identifier) else { continue }
            let name = type(of: value).name
            if name == DominantColour.name {
                backgrounds.append(esc(text))
                attributes += " data-dominant=\"\(esc(text))\""
            }
            if name == ThumbHash.name, let hash = Data(base64Encoded: text), let png = try? ThumbHash.placeholderPNG(Array(hash)) {
                backgrounds.insert("url(data:image/png;base64,\(png.base64EncodedString())) center/contain no-repeat", at: 0)
            }
            if name == ThumbHash.name || name == BlurHash.name { attributes += " data-\(name)=\"\(esc(text))\"" }
        }
        return (backgrounds.isEmpty ? "" : " style=\"background:\(backgrounds.joined(separator: ","))\"") + attributes
    }

    private func tile(_ item: ItemRecord, size: Int?, preview: SheetPreviews.Preview?, link: String?, folder: String, placeholder: String = "") -> String {
        let title = esc(item.sourceKey + " → " + item.outputPath)
        let caption = "<div class=\"name\">\(sourceName(item.sourceKey))</div>"
        if let failure = item.failure {
            return "<figure class=\"tile failed\" title=\"\(title)\"><div class=\"frame\"><span class=\"pill bad\">\(esc(failure.kind.rawValue))</span>"
                + "<span class=\"excerpt\">\(esc(String(failure.message.prefix(160))))</span></div>"
                + "<figcaption>\(caption)<div class=\"size\">\(esc(item.outputName)) · failed</div></figcaption></figure>"
        }
        guard let size else {
            return "<figure class=\"tile missing\" title=\"\(title)\"><div class=\"frame\">output missing</div>"
                + "<figcaption>\(caption)<div class=\"size\">\(esc(item.outputName))</div></figcaption></figure>"
        }
        // The preview, linking to the output; the output itself only when no preview could be made.
        let full = esc(link ?? href(item.outputPath, from: folder)), alt = esc(Paths.lastComponent(item.outputPath))
        let image = preview.map { "<img class=\"output preview\" src=\"\(esc(Self.percentEncoded($0.href)))\" alt=\"\(alt)\">" }
            ?? "<img class=\"output\" loading=\"lazy\" decoding=\"async\" src=\"\(full)\" alt=\"\(alt)\">"
        return "<figure class=\"tile\" title=\"\(title)\"><a class=\"frame\" href=\"\(full)\"\(placeholder)>\(image)</a>"
            + "<figcaption>\(caption)<div class=\"size\"><span>\(esc(item.outputName))</span>"
            + "<span><span class=\"dims\">\(preview.map { "\($0.width)×\($0.height) · " } ?? "")</span>\(Format.bytes(size))</span></div></figcaption></figure>"
    }

    // MARK: The document

    private func document(page: Int, sheet: Sheet, body: String) -> String {
        let subtitle = page == 1 ? "runner report" : "outputs, page \(page) of \(sheet.pageCount)"
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(esc(job.name)) · \(subtitle)</title><style>\(Self.style)</style></head>
            <body data-images-loaded="0/0"><header><div class="wrap"><h1>\(esc(job.name))</h1>
            <p class="muted">\(page == 1 ? "" : "<a href=\"\(esc(Self.percentEncoded(sheet.names[0])))\">← report</a> · ")\(subtitle) · \
            written \(timeTag(now)) · job <code>\(esc(job.filePath))</code> · state <code>\(esc(job.stateShownAs))</code></p>
            </div></header><main class="wrap">\(body)</main>
            <script>\(Self.script)</script></body></html>

            """
    }

    /// Reports on `<body>` how many outputs the browser has shown (`data-images-loaded="N/M"`) and
    /// adds the pixel size of each output shown whole; a source the browser cannot decode says so instead of a broken icon.
    private static let script = resource(PackageResources.report_js)

    private static let style = resource(PackageResources.report_css)

    /// A file of Resources/, embedded in the binary, without its final newline.
    private static func resource(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.last == UInt8(ascii: "\n") ? bytes.dropLast() : bytes[...], as: UTF8.self)
    }

    // MARK: Helpers

    package static func tone(exitCode: Int?) -> String {
        switch exitCode { case 0: "ok"; case 1: "bad"; default: "warn" }
    }

    private func timeTag(_ date: Date) -> String {
        "<time datetime=\"\(ISO8601DateFormatter().string(from: date))\" title=\"\(Format.relative(date, now: now))\">\(Format.date(date))</time>"
    }

    /// A source's file name (a URL's last path component), in full on hover.
    private func sourceName(_ source: String) -> String {
        let trimmed = source.split(separator: "?").first.map(String.init) ?? source
        return "<span title=\"\(esc(source))\">\(esc(Paths.lastComponent(trimmed)))</span>"
    }

    /// `path` as a URL relative to the report's folder, so the report and its outputs can move together.
    private func href(_ path: String, from folder: String) -> String {
        Self.percentEncoded(Paths.relative(path, from: folder))
    }

    /// RFC 3986's unreserved and sub-delimiter characters, `:`, `@` and `/`: ASCII only, so a
    /// non-ASCII name is sent as UTF-8 escapes.
    private static let pathCharacters = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,=:@/")

    package static func percentEncoded(_ path: String) -> String {
        path.addingPercentEncoding(withAllowedCharacters: pathCharacters) ?? path
    }
}

/// Text for HTML: every string from a job, a file name or an error message goes through it.
package func esc(_ text: String) -> String {
    var escaped = ""
    escaped.reserveCapacity(text.utf8.count)
    for character in text.unicodeScalars {
        switch character {
        case "&": escaped += "&amp;"
        case "<": escaped += "&lt;"
        case ">": escaped += "&gt;"
        case "\"": escaped += "&quot;"
        case "'": escaped += "&#39;"
        default: escaped.unicodeScalars.append(character)
        }
    }
    return escaped
}
