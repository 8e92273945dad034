import Foundation
import TestSupport
import Testing

@Suite("Deeply nested job files")
struct NestingTests {
    @Test("arrays 200 deep, 200 times over, are refused at once, not decoded for seconds")
    func deepNestingIsRefusedQuickly() {
        let element = String(repeating: "[", count: 200) + "1" + String(repeating: "]", count: 200)
        let text = #"{"version": 1, "sources": [{"path": "p", "include": ["# + Array(repeating: element, count: 200).joined(separator: ",")
            + #"]}], "outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}"#
        let began = threadCPUSeconds()
        #expect(throws: JobFileError("", "not valid JSON: nested more than 32 levels deep")) {
            try Job.parse(text: text, filePath: "/j/job.json")
        }
        #expect(threadCPUSeconds() - began < 1)
    }

    @Test("brackets inside strings do not count, and 32 levels are fine")
    func stringsAndTheLimit() throws {
        let name = String(repeating: "[{", count: 100)
        _ = try Job.parse(text: #"{"version": 1, "name": "\#(name)\"", "sources": [{"path": "p"}], "#
            + #""outputs": [{"name": "t", "path": "o/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}"#,
            filePath: "/j/job.json")
        let nested = String(repeating: "[", count: 31) + String(repeating: "]", count: 31)
        // 32 levels pass the depth check and reach the reader's own rules.
        let error = #expect(throws: JobFileError.self) {
            try Job.parse(text: #"{"version": 1, "name": \#(nested), "sources": {}}"#, filePath: "/j/job.json")
        }
        #expect(error?.description.hasPrefix("name: ") == true && error?.description.contains("nested") == false,
                "\(String(describing: error))")
    }
}
