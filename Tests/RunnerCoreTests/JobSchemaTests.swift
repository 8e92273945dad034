import Foundation
import Testing
import TestSupport

private extension JSONValue {
    subscript(_ key: String) -> JSONValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    var properties: [String: JSONValue] {
        if case .object(let fields)? = self["properties"] { return fields }
        return [:]
    }

    var elements: [JSONValue] {
        if case .array(let elements) = self { return elements }
        return []
    }

    var text: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// A tagged object's variants (`allOf` of if/then) by each name the tag may take.
    func variants(tag: String) -> [String: JSONValue] {
        var variants: [String: JSONValue] = [:]
        for branch in (self["allOf"] ?? .null).elements {
            guard let then = branch["then"] else { continue }
            for name in (then.properties[tag]?["enum"] ?? .null).elements.compactMap(\.text) { variants[name] = then }
        }
        return variants
    }

    /// The spellings a schema adds for `color`/`colour`; the README names the declared key only.
    var isAlternateSpelling: Bool { self["description"]?.text?.hasPrefix("The same key as") ?? false }
}

private let schema = JobSchema.document
private let output = schema.properties["outputs"]?["items"] ?? .null
private let ops = (output.properties["chain"]?["items"] ?? .null).variants(tag: "op")
private let formats = (output.properties["format"] ?? .null).variants(tag: "type")

private let readme = (try? String(contentsOfFile: (Fixtures.root as NSString).deletingLastPathComponent + "/docs/JOB-FILE.md",
                                  encoding: .utf8)) ?? ""

/// The rows of the README table under `heading`, as trimmed cells (`\|` inside a cell is text).
private func table(_ heading: String) -> [[String]] {
    let lines = readme.split(separator: "\n").map(String.init)
    guard let start = lines.firstIndex(of: heading) else { return [] }
    var rows: [[String]] = []
    var body = false
    for line in lines[(start + 1)...] {
        if line.hasPrefix("#") { break }
        if line.hasPrefix("|---") { body = true }
        guard body, line.hasPrefix("| `") else { continue }
        var cells: [String] = [], cell = "", previous: Character = " "
        for character in line.dropFirst() {
            if character == "|" && previous != "\\" {
                cells.append(cell.trimmingCharacters(in: .whitespaces))
                cell = ""
            } else {
                cell.append(character)
            }
            previous = character
        }
        rows.append(cells)
    }
    return rows
}

private func backticked(_ text: String) -> [String] {
    text.matches(of: #/`([^`]+)`/#).map { String($0.output.1) }
}

/// Parameters a cell documents in the README's manner: "`fit` (`cover`)", "`quality` 1–100
/// (`80`)", "`sigma` (required, > 0)"; the default is the first backticked word in the brackets.
/// A value among alternatives ("`lzw` \| `zstd` (`jpeg`)") is not a parameter.
private func parameters(_ cell: String) -> [(key: String, default: String?)] {
    cell.matches(of: #/`([a-zA-Z]\w*)`[^`(,|a-zA-Z]*\((`([^`]+)`)?/#).compactMap { match in
        cell[..<match.range.lowerBound].hasSuffix("\\| ") ? nil : (String(match.output.1), match.output.3.map(String.init))
    }
}

/// Whether the README's default `token` is the schema's: its `default`, or the note after "Default:".
private func agrees(_ property: JSONValue, _ token: String) -> Bool {
    let value = (try? JSONValue(parsing: token)) ?? .string(token)
    if let declared = property["default"] { return declared == value }
    return property["description"]?.text?.contains("Default: \(token)") ?? false
}

/// Checks a "| `key` | default | meaning |" table against `properties` (dotted keys name a section's
/// key) and returns the keys it documents.
private func checkKeyTable(_ heading: String, _ object: JSONValue) -> Set<String> {
    var documented: Set<String> = []
    let rows = table(heading)
    #expect(!rows.isEmpty, "README has no table under \(heading)")
    for row in rows where row.count >= 2 {
        let keys = backticked(row[0])
        let defaults = row[1].hasPrefix("`") ? backticked(String(row[1].prefix { $0 != "(" })) : []
        for (index, key) in keys.enumerated() {
            documented.insert(key)
            let path = key.split(separator: ".").map(String.init)
            let parent = path.count == 2 ? object.properties[path[0]] ?? .null : object
            guard let property = parent.properties[path.last!] else {
                Issue.record("\(heading): README documents \(key), the schema does not")
                continue
            }
            if row[1].hasPrefix("required") {
                #expect((parent["required"] ?? .null).elements.contains(.string(path.last!)), "\(key): README says required")
            } else if defaults.count == keys.count {
                #expect(agrees(property, defaults[index]), "\(key): README's default \(defaults[index]) is not the schema's \(property)")
            }
        }
    }
    return documented
}

/// Checks a "| `name` | parameters (default) | ... |" table of ops or formats against `variants`.
private func checkVariantTable(_ heading: String, _ variants: [String: JSONValue]) {
    var documented: Set<String> = []
    for row in table(heading) where row.count >= 2 {
        let names = backticked(row[0])
        documented.formUnion(names)
        guard let variant = variants[names[0]] else {
            Issue.record("\(heading): README documents \(names[0]), the schema does not")
            continue
        }
        let properties = variant.properties
        for (key, token) in parameters(row[1]) {
            guard let property = properties[key] else {
                Issue.record("\(names[0]): README documents \(key), the schema does not")
                continue
            }
            if let token { #expect(agrees(property, token), "\(names[0]).\(key): README's default \(token) is not the schema's \(property)") }
        }
        for (key, property) in properties where !property.isAlternateSpelling && !["op", "type"].contains(key) {
            #expect(row[1].contains("`\(key)`") || row[1].contains("`\(key):"), "\(names[0]): the README does not document \(key)")
        }
    }
    #expect(documented == Set(variants.keys), "\(heading): README \(documented.sorted()), schema \(variants.keys.sorted())")
}

/// Every property, variant and list element below `node` that has no description.
private func undescribed(_ node: JSONValue, at path: String) -> [String] {
    var missing: [String] = []
    if (node["description"]?.text ?? "").isEmpty { missing.append(path) }
    for (key, property) in node.properties { missing += undescribed(property, at: "\(path).\(key)") }
    if let items = node["items"], items["type"] == "object" { missing += undescribed(items, at: "\(path)[]") }
    for branch in (node["allOf"] ?? .null).elements {
        if let then = branch["then"] { missing += undescribed(then, at: "\(path)<\(then.properties.keys.sorted().first ?? "")>") }
    }
    return missing
}

@Suite("Job schema: rendered from the reader's declarations, in step with the README")
struct JobSchemaTests {
    @Test("the schema names every op, alias and format runner reads, and describes every key")
    func complete() {
        #expect(Set(ops.keys) == Set(operationCatalogue.flatMap { [$0.name] + $0.aliases }))
        #expect(Set(formats.keys) == Set(encoderCatalogue.map { $0.type }))
        #expect(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema")
        #expect(undescribed(schema, at: "job") == [])
        #expect(ops["thumbnail"]?.properties["fit"]?["default"] == "cover")
        // A number 1-100 or a target: both alternatives described.
        let quality = formats["jpeg"]?.properties["quality"]
        #expect(quality?["oneOf"]?.elements.first?["maximum"] == 100 && quality?["default"] == 80)
        #expect(quality?["oneOf"]?.elements.last?.properties["ssimulacra2"]?["maximum"] == 95)
    }

    @Test("the README's tables and the schema document the same keys, ops and formats, with the same defaults")
    func readme() {
        let top = checkKeyTable("### Top level", schema)
        for (key, property) in schema.properties {
            let sectionKeys = property["type"] == "object" ? property.properties.keys.map { "\(key).\($0)" } : [key]
            for documented in sectionKeys { #expect(top.contains(documented), "the README's top-level table lacks \(documented)") }
        }
        let outputs = checkKeyTable("### Outputs", output)
        for (key, property) in output.properties where !property.isAlternateSpelling {
            #expect(outputs.contains(key), "the README's outputs table lacks \(key)")
        }

        let source = schema.properties["sources"]?["items"] ?? .null
        var sourceKeys: Set<String> = []
        for row in table("### Sources") where row.count >= 2 {
            sourceKeys.formUnion(backticked(row[0]))
            for (key, token) in parameters(row[1]) {
                sourceKeys.insert(key)
                if let token, let property = source.properties[key] { #expect(agrees(property, token), "sources \(key): \(token)") }
            }
        }
        #expect(sourceKeys == Set(source.properties.keys))

        checkVariantTable("### Chain ops", ops)
        checkVariantTable("### Formats", formats)
    }

    @Test("runner schema prints the document with sorted keys and whole numbers as integers")
    func printed() throws {
        let text = JobSchema.text
        #expect(try JSONValue(parsing: text) == schema)
        #expect(text.contains(#""maximum": 100,"#) && text.hasPrefix("{\n  \"$schema\": "))
    }
}
