import Foundation
import Model
import Imaging
import State

/// The report's inline SVG bar chart: items per second for each run, oldest on the left, coloured
/// by exit code. Drawn at the page's content width, so its text is the page's size.
package enum ThroughputChart {
    package static let width = 1116.0, height = 210.0
    private static let left = 56.0, right = 16.0, top = 44.0, bottom = 30.0
    private static let colours: [(tone: String, colour: String, label: String)] = [
        ("ok", "#3559c7", "exit 0"), ("bad", "#d64535", "exit 1: failures"), ("warn", "#e0a100", "stopped or interrupted")]

    package static func svg(_ runs: [RunRecord]) -> String {
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let (maximum, divisions) = scale(runs.compactMap(\.itemsPerSecond).max() ?? 0)
        var svg = "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" "
            + "aria-label=\"Throughput of the last \(runs.count) runs\" xmlns=\"http://www.w3.org/2000/svg\">"
            + "<text class=\"title\" x=\"\(Int(left))\" y=\"22\">Throughput, items per second, last \(runs.count) run\(runs.count == 1 ? "" : "s")</text>"

        // The legend names the colours of the bars drawn.
        let tones = Set(runs.filter { $0.itemsPerSecond != nil && $0.done + $0.failed > 0 }.map { HTMLReport.tone(exitCode: $0.exitCode) })
        var legendX = width - right
        for entry in colours.reversed() where tones.contains(entry.tone) {
            legendX -= Double(entry.label.count) * 6.2 + 30
            svg += "<rect x=\"\(f(legendX))\" y=\"13\" width=\"11\" height=\"11\" rx=\"2\" fill=\"\(entry.colour)\"/>"
                + "<text x=\"\(f(legendX + 16))\" y=\"22\">\(entry.label)</text>"
        }

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
        let labelEvery = max(1, Int((34 / slot).rounded(.up)))
        for (index, run) in runs.enumerated() {
            let centre = left + slot * (Double(index) + 0.5)
            let tone = HTMLReport.tone(exitCode: run.exitCode)
            if let rate = run.itemsPerSecond {
                let barHeight = maximum > 0 ? plotHeight * rate / maximum : 0
                svg += "<rect class=\"bar\" x=\"\(f(centre - barWidth / 2))\" y=\"\(f(top + plotHeight - barHeight))\" "
                    + "width=\"\(f(barWidth))\" height=\"\(f(barHeight))\" rx=\"3\" "
                    + "fill=\"\(colours.first { $0.tone == tone }!.colour)\"><title>run #\(run.id): \(Format.rate(rate)) items/s, "
                    + "\(Format.count(run.done)) done, \(Format.count(run.failed)) failed, exit \(run.exitCode.map(String.init) ?? "–")</title></rect>"
                if run.done + run.failed == 0 {
                    if slot >= 70 {
                        svg += "<text x=\"\(f(centre))\" y=\"\(f(top + plotHeight - 6))\" text-anchor=\"middle\">nothing to do</text>"
                    }
                } else if slot >= 34 {
                    svg += "<text class=\"value\" x=\"\(f(centre))\" y=\"\(f(top + plotHeight - barHeight - 5))\" "
                        + "text-anchor=\"middle\">\(Format.rate(rate))</text>"
                }
            } else {
                svg += "<text x=\"\(f(centre))\" y=\"\(f(top + plotHeight - 5))\" text-anchor=\"middle\">no end</text>"
            }
            if index % labelEvery == 0 || index == runs.count - 1 {
                svg += "<text x=\"\(f(centre))\" y=\"\(f(height - 10))\" text-anchor=\"middle\">#\(run.id)</text>"
            }
        }
        return svg + "</svg>"
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
