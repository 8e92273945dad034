import Foundation
import GRDB
import Testing
import TestSupport

/// The library's rooms: one target per stage, in the order data flows. Package.swift lets a target
/// depend only on earlier ones; these checks keep the source files honest about it too, and keep
/// functions short enough to read at once.
@Suite("Architecture")
struct ArchitectureTests {
    /// The stage targets in flow order (Package.swift declares the same dependencies).
    static let flow = ["Support", "ObjectStore", "Model", "Keys", "Imaging", "JobFile", "Planning", "State", "Output",
                       "Reporting", "Loading", "Processing", "Scheduling", "Pipeline"]

    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources").path

    static func swiftFiles(in target: String) -> [String] {
        let folder = sources + "/" + target
        let names = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []
        return names.filter { $0.hasSuffix(".swift") }.map { folder + "/" + $0 }
    }

    @Test("no source file imports a stage that comes later in the flow")
    func importsFollowTheFlow() throws {
        var checked = 0
        for (position, target) in Self.flow.enumerated() {
            for file in Self.swiftFiles(in: target) {
                let text = try String(contentsOfFile: file, encoding: .utf8)
                for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.contains(" import ") {
                    guard let module = line.split(separator: " ").last.map(String.init),
                          let imported = Self.flow.firstIndex(of: module) else { continue }
                    #expect(imported < position, "\(target)/\(Paths.lastComponent(file)) imports \(module), which comes after it")
                }
                checked += 1
            }
        }
        #expect(checked > 60, "found only \(checked) files under \(Self.sources)")
    }

    @Test("every dependency a target declares in Package.swift is imported by one of its files")
    func declaredDependenciesAreUsed() throws {
        let package = (Self.sources as NSString).deletingLastPathComponent
        // A scratch folder of its own: `swift test` holds the package's, and SwiftPM would wait for it.
        let scratch = NSTemporaryDirectory() + "runner-dump-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let dump = try RunningCommand("/usr/bin/env", arguments: ["swift", "package", "--scratch-path", scratch, "dump-package"],
                                      directory: package, environment: [:]).wait()
        try #require(dump.status == 0, "\(dump.stderr)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var checked = 0
        for target in manifest["targets"] as? [[String: Any]] ?? [] where target["type"] as? String != "system" {
            let name = target["name"] as? String ?? ""
            let folder = target["path"] as? String ?? ((target["type"] as? String == "test" ? "Tests/" : "Sources/") + name)
            let files = (FileManager.default.enumerator(atPath: package + "/" + folder)?.compactMap { $0 as? String } ?? [])
                .filter { $0.hasSuffix(".swift") }
            let imported = Set(try files.flatMap { file in
                try String(contentsOfFile: package + "/" + folder + "/" + file, encoding: .utf8).split(separator: "\n")
                    .filter { $0.hasPrefix("import ") || $0.contains(" import ") }.compactMap { $0.split(separator: " ").last.map(String.init) }
            })
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                guard let used = (dependency["byName"] ?? dependency["product"] ?? dependency["target"]) as? [Any],
                      let module = used.first as? String else { continue }
                #expect(imported.contains(module), "\(name) declares \(module) in Package.swift and imports it nowhere")
                checked += 1
            }
        }
        #expect(checked > 20, "checked only \(checked) dependencies")
    }

    @Test("no function, initializer or closure body in Sources is over 60 lines")
    func functionsAreShort() throws {
        var long: [String] = []
        for target in Self.flow + ["runner"] {
            for file in Self.swiftFiles(in: target) {
                let lines = try String(contentsOfFile: file, encoding: .utf8).components(separatedBy: "\n")
                for (index, line) in lines.enumerated() where Self.startsFunction(line) {
                    // A body opens within the signature's lines; a protocol requirement has none.
                    let signature = lines[index..<min(index + 5, lines.count)].prefix { !$0.isEmpty }
                    guard signature.contains(where: { $0.hasSuffix("{") }) else { continue }
                    let indent = line.prefix { $0 == " " }
                    guard let end = lines[(index + 1)...].firstIndex(where: { $0.hasPrefix(indent + "}") }) else { continue }
                    if end - index + 1 > 60 { long.append("\(Paths.lastComponent(file)):\(index + 1) (\(end - index + 1) lines)") }
                }
            }
        }
        #expect(long.isEmpty, "over 60 lines: \(long)")
    }

    @Test("SQL is written in State alone; no state, failure kind, run outcome or walk state is spelled but through its enum")
    func persistenceSpeaksInTypes() throws {
        let sql = try NSRegularExpression(pattern: #"\b(SELECT\b[^"]*\bFROM|INSERT (OR \w+ )?INTO|UPDATE \w+ SET|DELETE FROM|CREATE (TABLE|INDEX))\b"#)
        // Each enum's raw value (WalkedPath.Seen's, as State stores it) is the one spelling of its values.
        let words = Set(ItemState.allCases.map(\.rawValue) + ItemFailure.Kind.allCases.map(\.rawValue) + RunOutcome.allCases.map(\.rawValue)
            + [WalkedPath.Seen.folder, .other, .missing, .absent].compactMap { String.fromDatabaseValue($0.databaseValue) })
        let word = "\"(" + words.map(NSRegularExpression.escapedPattern).joined(separator: "|") + ")\""
        // Outside State, such a word is never compared with, switched on, looked for in a list, or a
        // dictionary's key read by it: JSON keys, job-file keys and prose may say it.
        let compared = try NSRegularExpression(pattern: [#"(==|!=)\s*W"#, #"W\s*(==|!=)"#, #"\bcase\s+("[^"]*",\s*)*W"#,
                                                         #"\[[^\]\[]*W[^\]\[]*\]\s*\.contains\("#, #"[\w)\]]\[W\]"#,
                                                         #"\.(contains|hasPrefix|hasSuffix)\(W\)"#, #"rawValue:\s*W"#]
            .map { $0.replacingOccurrences(of: "W", with: word) }.joined(separator: "|"))
        var misplaced: [String] = [], literal: [String] = [], spelled: [String] = []
        for target in Self.flow + ["runner"] {
            for file in Self.swiftFiles(in: target) {
                let lines = try String(contentsOfFile: file, encoding: .utf8).components(separatedBy: "\n")
                for (index, line) in lines.enumerated() {
                    let place = "\(target)/\(Paths.lastComponent(file)):\(index + 1)", range = NSRange(line.startIndex..., in: line)
                    if target != "State", sql.firstMatch(in: line, range: range) != nil { misplaced.append(place) }
                    if target != "State", compared.firstMatch(in: line, range: range) != nil { spelled.append(place) }
                    // Shipped migrations are frozen, their defaults included.
                    if words.contains(where: { line.contains("'\($0)'") }), !line.contains(" DEFAULT ") { literal.append(place) }
                }
            }
        }
        #expect(misplaced.isEmpty, "SQL outside State: \(misplaced)")
        #expect(literal.isEmpty, "a stored value spelled as an SQL literal (use ItemState.x.sql / RunOutcome.x.sql): \(literal)")
        #expect(spelled.isEmpty, "a state, kind, outcome or walk state compared as a string (use its enum): \(spelled)")
    }

    private static func startsFunction(_ line: String) -> Bool {
        let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
        let modifiers: Set<Substring> = ["public", "package", "private", "fileprivate", "internal", "static", "final",
                                         "override", "mutating", "nonisolated", "convenience", "required", "@discardableResult"]
        guard let keyword = words.first(where: { !modifiers.contains($0) }) else { return false }
        return keyword == "func" || keyword.hasPrefix("init(") || keyword.hasPrefix("init?(")
    }
}
