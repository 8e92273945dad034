/// A JSON syntax error at a 1-based line and column (the column counts characters).
public struct JSONSyntaxError: Error, Equatable, Sendable {
    public let line: Int
    public let column: Int
    public let message: String
    /// Arrays and objects nested deeper than `JSONValue(parsing:)` reads: a fault of the text as a
    /// whole, whose place says nothing.
    public var isTooDeep = false
}

extension JSONValue {
    /// Parses a JSON text (RFC 8259; a leading byte order mark is skipped). Job files are parsed
    /// here rather than by JSONDecoder because a syntax error must say where it is and what was
    /// expected there, and Foundation's error on Linux names neither line nor column.
    /// A key given twice keeps its last value, as JSONDecoder does.
    public init(parsing text: String) throws(JSONSyntaxError) {
        var parser = JSONParser(bytes: Array(text.utf8))
        self = try parser.document()
    }
}

extension JSONValue {
    /// Where in `text` the value at `keyPath` begins, as 1-based line and column (counted as syntax
    /// errors count them), for an error that names the path: `outputs[0].chain[1].width`, the
    /// spelling `JobFileError` uses (a key may hold `.` or `[` itself). When the path goes on past
    /// what the text has (a required key that is missing), the deepest value on its way; with
    /// `member`, that key of the object found (an unknown key). Nil for text that breaks off before.
    public static func position(of keyPath: String, member: String? = nil, in text: String) -> (line: Int, column: Int)? {
        var parser = JSONParser(bytes: Array(text.utf8))
        guard let index = try? parser.locate(keyPath[...], member: member) else { return nil }
        return parser.lineAndColumn(at: index)
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0

    /// Deep enough for any job file (six levels or so); bounded so a hostile file cannot exhaust the stack.
    static let maxDepth = 32

    init(bytes: [UInt8]) {
        self.bytes = bytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    mutating func document() throws(JSONSyntaxError) -> JSONValue {
        let document = try value()
        skipWhitespace()
        guard index == bytes.count else { throw failure("expected the end of the file after the JSON value") }
        return document
    }

    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = next, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func value() throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard let byte = next else { throw failure("expected a value") }
        switch byte {
        case UInt8(ascii: "{"):
            var fields: [String: JSONValue] = [:]
            _ = try items(keyed: true) { parser, key throws(JSONSyntaxError) in
                fields[key] = try parser.value()
                return false
            }
            return .object(fields)
        case UInt8(ascii: "["):
            var values: [JSONValue] = []
            _ = try items(keyed: false) { parser, _ throws(JSONSyntaxError) in
                values.append(try parser.value())
                return false
            }
            return .array(values)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default:
            for (word, literal) in [("true", JSONValue.bool(true)), ("false", .bool(false)), ("null", .null)]
            where bytes[index...].starts(with: word.utf8) {
                index += word.utf8.count
                return literal
            }
            let isLetter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
            throw failure(isLetter || byte == UInt8(ascii: "'") ? "expected a value (text is written in double quotes)" : "expected a value")
        }
    }

    /// Steps through the object (`keyed`) or array at the current position: `item` reads each member's
    /// value (given its key; empty for an element) or element, or stops at it (true). Returns where the member's key or the
    /// element it stopped at begins; nil after the end.
    private mutating func items(keyed: Bool, _ item: (inout JSONParser, String) throws(JSONSyntaxError) -> Bool) throws(JSONSyntaxError) -> Int? {
        let close = UInt8(ascii: keyed ? "}" : "]")
        guard depth < Self.maxDepth else { throw failure("nested more than \(Self.maxDepth) levels deep", tooDeep: true) }
        // Steps over the opening bracket.
        depth += 1
        index += 1
        skipWhitespace()
        if next == close { index += 1; depth -= 1; return nil }
        for count in 0... {
            skipWhitespace()
            let start = index
            var key = ""
            if keyed {
                guard next == UInt8(ascii: "\"") else {
                    throw failure(count == 0 ? "expected a key in double quotes or '}'" : "expected a key in double quotes")
                }
                key = try string()
                skipWhitespace()
                guard next == UInt8(ascii: ":") else { throw failure("expected ':'") }
                index += 1
            }
            if try item(&self, key) { return start }
            skipWhitespace()
            switch next {
            case UInt8(ascii: ","): index += 1
            case close: index += 1; depth -= 1; return nil
            default: throw failure(keyed ? "expected ',' or '}'" : "expected ',' or ']'")
            }
        }
        preconditionFailure("the loop returns or throws")
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        var text: [UInt8] = []
        while true {
            guard let byte = next else { throw failure("expected '\"' to end the string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                try escape(into: &text)
            case 0x0A, 0x0D: throw failure("expected '\"' to end the string before the end of the line")
            case ..<0x20: throw failure("control character in a string (write it as an escape such as \\t)")
            default:
                text.append(byte)
                index += 1
            }
        }
    }

    private mutating func escape(into text: inout [UInt8]) throws(JSONSyntaxError) {
        let simple: [UInt8: UInt8] = [UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F,
                                      UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A,
                                      UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09]
        guard let byte = next else { throw failure("expected an escape after '\\'") }
        if let replacement = simple[byte] {
            text.append(replacement)
            index += 1
            return
        }
        guard byte == UInt8(ascii: "u") else { throw failure("unknown escape '\\\(Character(Unicode.Scalar(byte)))'") }
        index += 1
        var code = try hexQuad()
        if (0xD800...0xDBFF).contains(code) {
            // A character outside the Basic Multilingual Plane: a high surrogate, then a low one.
            guard bytes[index...].starts(with: Array("\\u".utf8)) else { throw failure("expected a low surrogate \\uDC00-\\uDFFF") }
            index += 2
            let low = try hexQuad()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("expected a low surrogate \\uDC00-\\uDFFF") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(code) else { throw failure("unpaired surrogate in a \\u escape") }
        text.append(contentsOf: String(scalar).utf8)
    }

    private mutating func hexQuad() throws(JSONSyntaxError) -> UInt32 {
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = next, let digit = Character(Unicode.Scalar(byte)).hexDigitValue else {
                throw failure("expected 4 hex digits after \\u")
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    private mutating func number() throws(JSONSyntaxError) -> Double {
        let start = index
        func isDigit(_ byte: UInt8?) -> Bool { byte.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false }
        if next == UInt8(ascii: "-") { index += 1 }
        guard isDigit(next) else { throw failure("expected a digit") }
        if next == UInt8(ascii: "0") {
            index += 1
            if isDigit(next) { throw failure("a number must not start with 0") }
        }
        while isDigit(next) { index += 1 }
        if next == UInt8(ascii: ".") {
            index += 1
            guard isDigit(next) else { throw failure("expected a digit after '.'") }
            while isDigit(next) { index += 1 }
        }
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            index += 1
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { index += 1 }
            guard isDigit(next) else { throw failure("expected a digit in the exponent") }
            while isDigit(next) { index += 1 }
        }
        guard let number = Double(String(decoding: bytes[start..<index], as: UTF8.self)), number.isFinite else {
            index = start
            throw failure("number out of range")
        }
        return number
    }

    /// The error at the current position; at the end of the text it says so.
    private func failure(_ expected: String, tooDeep: Bool = false) -> JSONSyntaxError {
        let (line, column) = lineAndColumn(at: index)
        return JSONSyntaxError(line: line, column: column,
                               message: index >= bytes.count ? expected + " before the end of the file" : expected, isTooDeep: tooDeep)
    }

    /// A byte offset as a 1-based line and a column in characters.
    func lineAndColumn(at offset: Int) -> (line: Int, column: Int) {
        let bomLength = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let position = min(offset, bytes.count)
        let before = bytes[bomLength..<max(bomLength, position)]
        let lineStart = before.lastIndex(of: 0x0A).map { $0 + 1 } ?? bomLength
        let column = String(decoding: bytes[lineStart..<max(lineStart, position)], as: UTF8.self).count + 1
        return (before.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }, column)
    }

    // MARK: Locating a key path

    /// The byte offset where the value at `rest` begins (see `JSONValue.position(of:member:in:)`).
    mutating func locate(_ path: Substring, member: String?) throws(JSONSyntaxError) -> Int {
        var rest = path
        while true {
            skipWhitespace()
            let here = index
            if rest.isEmpty {
                guard let member, next == UInt8(ascii: "{") else { return here }
                return try items(keyed: true) { parser, key throws(JSONSyntaxError) in key == member ? true : try parser.skipValue() } ?? here
            }
            switch next {
            case UInt8(ascii: "{"):
                // The first key the path goes on from (a key may hold `.` or `[` itself).
                var step: String?
                _ = try items(keyed: true) { parser, key throws(JSONSyntaxError) in
                    let after = rest.utf8.starts(with: key.utf8) ? rest.utf8.dropFirst(key.utf8.count) : nil
                    guard let after, after.isEmpty || after.first == UInt8(ascii: ".") || after.first == UInt8(ascii: "[") else {
                        return try parser.skipValue()
                    }
                    step = key
                    return true
                }
                guard let step else { return here }
                rest = Self.dropping(step, from: rest)
            case UInt8(ascii: "["):
                guard rest.first == "[", let close = rest.firstIndex(of: "]"), let wanted = Int(rest[rest.index(after: rest.startIndex)..<close])
                else { return here }
                var count = 0
                guard try items(keyed: false, { parser, _ throws(JSONSyntaxError) in
                    defer { count += 1 }
                    return count == wanted ? true : try parser.skipValue()
                }) != nil else { return here }
                rest = Self.dropping(String(rest[...close]), from: rest)
            default: return here
            }
        }
    }

    /// Steps over a value; false, to go on to the next.
    private mutating func skipValue() throws(JSONSyntaxError) -> Bool {
        _ = try value()
        return false
    }

    /// `path` after its first step and the `.` that follows it.
    private static func dropping(_ step: String, from path: Substring) -> Substring {
        var rest = path.utf8.dropFirst(step.utf8.count)
        if rest.first == UInt8(ascii: ".") { rest = rest.dropFirst() }
        return Substring(rest)
    }
}
