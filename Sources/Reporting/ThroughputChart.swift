import Foundation
import Support
import State

/// The report's inline SVG bar chart: items per second for each run, oldest on the left, coloured
/// by exit code. Drawn at the page's content width, so its text is the page's size.
package enum ThroughputChart {
    package static let width = 1116.0, height = 210.0
    private static let left = 56.0, right = 16.0, top = 44.0, bottom = 30.0
    private static let colours: [(tone: String, colour: String, label: String)] = [
        ("ok", "#3559c7", "exit 0"), ("bad", "#d64535", "exit 1: failures"), ("warn", "#e0a100", "stopped or interrupted")]

    package static func svg(_ runs: [JobRun]) -> String {
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let (maximum, divisions) = scale(runs.compactMap(\.run.itemsPerSecond).max() ?? 0)
        var svg = "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" "
            + "aria-label=\"Throughput of the last \(runs.count) runs\" xmlns=\"http://www.w3.org/2000/svg\">"
            + "<text class=\"title\" x=\"\(Int(left))\" y=\"22\">Throughput, items per second, last \(Format.plural(runs.count, "run"))</text>"
            + legend(runs.map(\.run))

        for step in 0...divisions {
            let value = maximum * Double(step) / Double(divisions)
            let y = top + plotHeight * (1 - Double(step) / Double(divisions))
            svg += "<line x1=\"\(f(left))\" x2=\"\(f(width - right))\" y1=\"\(f(y))\" y2=\"\(f(y))\" "
                + "stroke=\"\(step == 0 ? "#c4c9d2" : "#eceef2")\"/>"
                + "<text x=\"\(f(left - 8))\" y=\"\(f(y + 4))\" text-anchor=\"end\">"
                + (maximum / Double(divisions) < 1 ? String(format: "%.1f", value) : Format.count(Int(value))) + "</text>"
        }

        let slot = plotWidth / Double(max(runs.count, 1))
        let barWidth = min(56, slot * 0.62)
        // A run is named by its shard when the job runs as shards (run ids count per shard). Labels
        // go on every few bars, counted from the newest, so that the widest never meets the next.
        let labels = runs.map { $0.shard ?? "#\($0.run.id)" }
        let labelEvery = max(1, Int(((labels.map(textWidth).max() ?? 0) + 8) / slot) + 1)
        for (index, (run, label)) in zip(runs.map(\.run), labels).enumerated() {
            let centre = left + slot * (Double(index) + 0.5)
            svg += bar(run, label: label, centre: centre, slot: slot, barWidth: barWidth, maximum: maximum, plotHeight: plotHeight)
            if (runs.count - 1 - index) % labelEvery == 0 {
                // Kept inside the chart at either end.
                let half = textWidth(label) / 2, x = min(max(centre, half + 2), width - half - 2)
                svg += "<text class=\"run\" x=\"\(f(x))\" y=\"\(f(height - 10))\" text-anchor=\"middle\">\(esc(label))</text>"
            }
        }
        return svg + "</svg>"
    }

    /// The legend names the colours of the bars drawn, right-aligned on the title's line.
    private static func legend(_ runs: [RunRecord]) -> String {
        let tones = Set(runs.filter { $0.itemsPerSecond != nil && $0.done + $0.failed > 0 }.map { HTMLReport.tone(exitCode: $0.exitCode) })
        var svg = "", legendX = width - right
        for entry in colours.reversed() where tones.contains(entry.tone) {
            legendX -= textWidth(entry.label) + 30
            svg += "<rect x=\"\(f(legendX))\" y=\"13\" width=\"11\" height=\"11\" rx=\"2\" fill=\"\(entry.colour)\"/>"
                + "<text x=\"\(f(legendX + 16))\" y=\"22\">\(entry.label)</text>"
        }
        return svg
    }

    /// One run's bar, and its value above it when the text fits in the bar's slot.
    private static func bar(_ run: RunRecord, label: String, centre: Double, slot: Double, barWidth: Double,
                            maximum: Double, plotHeight: Double) -> String {
        let fits = { (text: String) in textWidth(text) + 6 <= slot }
        guard let rate = run.itemsPerSecond else {
            return fits("no end") ? "<text x=\"\(f(centre))\" y=\"\(f(top + plotHeight - 5))\" text-anchor=\"middle\">no end</text>" : ""
        }
        let tone = HTMLReport.tone(exitCode: run.exitCode)
        let barHeight = maximum > 0 ? plotHeight * rate / maximum : 0
        var svg = "<rect class=\"bar\" x=\"\(f(centre - barWidth / 2))\" y=\"\(f(top + plotHeight - barHeight))\" "
            + "width=\"\(f(barWidth))\" height=\"\(f(barHeight))\" rx=\"\(f(min(3, barWidth / 4)))\" "
            + "fill=\"\(colours.first { $0.tone == tone }!.colour)\"><title>\(esc(label.hasPrefix("#") ? "run \(label)" : "shard \(label), run #\(run.id)")): "
            + "\(Format.rate(rate)) items/s, \(Format.count(run.done)) done, \(Format.count(run.failed)) failed, "
            + "exit \(run.exitCode.map(String.init) ?? "–")</title></rect>"
        if run.done + run.failed == 0 {
            if fits("nothing to do") {
                svg += "<text x=\"\(f(centre))\" y=\"\(f(top + plotHeight - 6))\" text-anchor=\"middle\">nothing to do</text>"
            }
        } else if fits(Format.rate(rate)) {
            svg += "<text class=\"value\" x=\"\(f(centre))\" y=\"\(f(top + plotHeight - barHeight - 5))\" "
                + "text-anchor=\"middle\">\(Format.rate(rate))</text>"
        }
        return svg
    }

    /// A generous width of `text` at the chart's 11 px: wide fonts (DejaVu Sans) run to about
    /// 0.64 em a digit or letter, 0.84 em for `#`, `m` or `w`.
    private static func textWidth(_ text: String) -> Double {
        text.reduce(0) { width, character in width + ("#mwMW".contains(character) ? 9.3 : "/.,:; il".contains(character) ? 4 : 7.1) }
    }

    /// A round top for the axis (1, 2 or 5 times a power of ten) and how many gridlines divide it.
    package static func scale(_ largest: Double) -> (maximum: Double, divisions: Int) {
        guard largest > 0 else { return (1, 4) }
        let power = pow(10, floor(log10(largest)))
        let fraction = largest / power
        let nice: Double = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10
        return (nice * power, nice == 2 ? 4 : 5)
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
