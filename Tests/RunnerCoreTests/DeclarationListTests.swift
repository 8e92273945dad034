import Foundation
import Testing
import TestSupport

/// Every list that names the members of a declaration (derived values, failure kinds, plan counts)
/// names all of them: made from the declaration, or checked against it here.
@Suite("Lists kept from one declaration")
struct DeclarationListTests {
    static let repository = (Fixtures.root as NSString).deletingLastPathComponent

    static func text(_ relative: String) throws -> String { try String(contentsOfFile: repository + "/" + relative, encoding: .utf8) }

    @Test("each derived value is in the job-file schema (enum and description), the manifest schema (closed) and JOB-FILE.md's table")
    func derivedValues() throws {
        let schema = JobSchema.text, manifest = SiteManifestSchema.document, guide = try Self.text("docs/JOB-FILE.md")
        guard case .object(let root) = manifest, case .object(let definitions)? = root["$defs"], case .object(let source)? = definitions["source"],
              case .object(let properties)? = source["properties"], case .object(let derived)? = properties["derived"],
              case .object(let named)? = derived["properties"] else { Issue.record("no derived values in the manifest schema"); return }
        #expect(derived["additionalProperties"] == .bool(false), "the manifest names no derived value the catalogue does not")
        for type in derivedValueCatalogue {
            #expect(schema.contains("\"\(type.name)\""), "\(type.name) in the job-file schema")
            #expect(schema.contains("from its pixels: \(derivedValueNames)."), "\(type.name) in the derive key's description")
            #expect(named[type.name] != nil, "\(type.name) in the manifest schema")
            #expect(guide.contains("| `\(type.name)` |"), "\(type.name) in docs/JOB-FILE.md's table")
        }
        #expect(Set(named.keys) == Set(derivedValueCatalogue.map { $0.name }))
    }

    @Test("each failure kind is in OPERATIONS.md's list and table, and each plan count in the plan event's schema")
    func kindsAndCounts() throws {
        let operations = try Self.text("docs/OPERATIONS.md")
        for kind in ItemFailure.Kind.allCases {
            #expect(operations.contains("| `\(kind.rawValue)` |") && operations.contains("`\(kind.rawValue)`,") || operations.contains("`\(kind.rawValue)`."),
                    "\(kind.rawValue) in docs/OPERATIONS.md")
        }
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(PlanCounts())) as? [String: Any] ?? [:]
        let events = RunEventSchema.text
        for key in encoded.keys { #expect(events.contains("\"\(key)\""), "plan count \(key) in the plan event's schema") }
    }
}
