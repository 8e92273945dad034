import Foundation
import Testing
import TestSupport

/// A job whose top level has `derive` written as `list`.
private func job(derive list: String) -> String {
    """
    {"version": 1, "sources": [{"path": "p"}], "derive": \(list),
     "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}
    """
}

@Suite("The derive key: read and checked with exact key paths")
struct DeriveKeyTests {
    @Test("names and objects read into values whose identifiers spell out every setting")
    func identifiers() throws {
        let parsed = try Job.parse(text: job(derive: #"["thumbhash", {"value": "blurhash", "x": 9, "y": 1}, "dhash", "phash", "dominant", {"value": "focal"}]"#),
                                   filePath: "/j/job.json")
        #expect(parsed.derive.identifiers == [
            "thumbhash(frame:100)", "blurhash(x:9,y:1,frame:100)", "dhash(bits:64,frame:100)", "phash(bits:64,dct:32,frame:100)",
            "dominant(bins:16,frame:100)", "focal(interesting:attention,crop:0.5,frame:100)",
        ])
        // A name alone takes the defaults; the same settings written out give the same identifier.
        let named = try Job.parse(text: job(derive: #"["blurhash"]"#), filePath: "/j/job.json")
        let written = try Job.parse(text: job(derive: #"[{"value": "blurhash", "x": 4.0, "y": 3}]"#), filePath: "/j/job.json")
        #expect(named.derive.identifiers == ["blurhash(x:4,y:3,frame:100)"])
        #expect(written.derive.identifiers == named.derive.identifiers)
        let none = try Job.parse(text: job(derive: "[]"), filePath: "/j/job.json")
        #expect(none.derive.values.isEmpty)
        // Adding derive changes no output's recipe, so it would render nothing again.
        let without = try Job.parse(text: job(derive: "[]").replacingOccurrences(of: #""derive": [], "#, with: ""), filePath: "/j/job.json")
        #expect(without.outputs[0].recipe == parsed.outputs[0].recipe && without.derive.values.isEmpty)
    }

    @Test("a bad derive list is refused naming the exact element and key", arguments: [
        (#"["thumbhash", "blurhash", "dhsh"]"#, #"derive[2]: unknown value "dhsh" (did you mean "dhash"?)"#),
        (#"[{"value": "phsh"}]"#, #"derive[0].value: unknown value "phsh" (did you mean "phash"?)"#),
        (#"[{"valeu": "dhash"}]"#, #"derive[0]: unknown key "valeu" (did you mean "value"?)"#),
        (#"[{"value": "blurhash", "x": 10}]"#, "derive[0].x: must be between 1 and 9"),
        (#"[{"value": "blurhash", "y": 0}]"#, "derive[0].y: must be between 1 and 9"),
        (#"[{"value": "blurhash", "x": 2.5}]"#, "derive[0].x: must be an integer between 1 and 9"),
        (#"[{"value": "blurhash", "z": 1}]"#, #"derive[0]: unknown key "z" (known: value, x, y)"#),
        (#"[{"value": "dhash", "x": 4}]"#, #"derive[0]: unknown key "x" (known: value)"#),
        (#"["dhash", "phash", {"value": "dhash"}]"#, #"derive[2]: "dhash" is already listed at derive[0]"#),
        (#""dhash""#, "derive: must be an array, not a string"),
        (#"[3]"#, #"derive[0]: must be a value's name or an object naming it in "value", not a number"#),
        (#"[{}]"#, "derive[0].value: is required"),
    ])
    func refused(list: String, message: String) {
        #expect(verdict(job(derive: list)) == message)
    }
}
