import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The fuzzers' shared machinery: a seeded generator, JSON as it is written (numbers keep their
// spelling, objects keep their order and may repeat a key), job-file mutations, hostile path and
// URL material, and byte-level path arithmetic to check results against (independent of runner's).

/// SplitMix64: small, fast, and the same cases for the same seed on every machine.
public struct FuzzRandom {
    private var state: UInt64

    public init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 ^ 0xD1B5_4A32_D192_ED03 }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0 ..< bound.
    public mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }

    public mutating func chance(_ probability: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < probability }

    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// The case count and seed a fuzz test runs with: `RUNNER_FUZZ_<NAME>` and `RUNNER_FUZZ_SEED`.
public enum FuzzSettings {
    public static func count(_ name: String, default fallback: Int) -> Int {
        ProcessInfo.processInfo.environment["RUNNER_FUZZ_" + name].flatMap { Int($0) } ?? fallback
    }

    public static var seed: UInt64 {
        ProcessInfo.processInfo.environment["RUNNER_FUZZ_SEED"].flatMap { UInt64($0) } ?? 14
    }
}

/// This process's resident memory, from /proc/self/status: what a case took is the peak after it
/// over the resident size before it, the peak set back to that size first (/proc/self/clear_refs).
public enum ResidentMemory {
    /// Sets the peak back to the resident size now; false where the kernel does not let it.
    @discardableResult
    public static func resetPeak() -> Bool {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC)
        defer { if descriptor >= 0 { close(descriptor) } }
        return descriptor >= 0 && write(descriptor, "5", 1) == 1
    }

    public static var now: Int { field("VmRSS:") }
    public static var peak: Int { field("VmHWM:") }

    /// What `body` took: the peak while it ran over the resident size before it.
    public static func taken(by body: () -> Void) -> (bytes: Int, before: Int, peak: Int) {
        resetPeak()
        let before = now
        body()
        let peak = self.peak
        return (peak - before, before, peak)
    }

    private static func field(_ name: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(name) } ?? ""
        return (Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0) << 10
    }
}

/// Records the case about to run in a file, so a case that traps the process can be named and
/// reproduced: `RUNNER_FUZZ_SEED`, the fuzzer's name and the index in `lastCaseFile`.
public final class FuzzProgress {
    public let lastCaseFile: String
    private let descriptor: Int32

    public init(_ name: String) {
        lastCaseFile = NSTemporaryDirectory() + "runner-fuzz-\(name)-last-case"
        descriptor = open(lastCaseFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    }

    deinit { close(descriptor) }

    public func mark(_ index: Int) {
        let line = Array("case \(index) seed \(FuzzSettings.seed)\n".utf8)
        _ = line.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        _ = ftruncate(descriptor, off_t(line.count))
    }
}

// MARK: JSON as written

public indirect enum FuzzJSON: Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([FuzzJSON])
    case object([(String, FuzzJSON)])

    public struct ParseError: Error {}

    /// Parses strict JSON (the seeds), keeping every number's spelling and every key's order.
    public init(parsing text: String) throws {
        var parser = Parser(bytes: Array(text.utf8))
        self = try parser.value()
    }

    public var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    public func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let literal): out += literal
        case .string(let value): FuzzJSON.quote(value, into: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let fields):
            out += "{"
            for (index, (key, value)) in fields.enumerated() {
                if index > 0 { out += "," }
                FuzzJSON.quote(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    static func quote(_ value: String, into out: inout String) {
        out += "\""
        defer { out += "\"" }
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out += value
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
    }

    /// Whether the text is at most `limit` bytes, counted without writing it (a mutation that
    /// repeats a long string 2,000 times makes a small tree of a huge text), and given up past it.
    public func fits(within limit: Int) -> Bool {
        var left = limit
        func count(_ node: FuzzJSON) -> Bool {
            switch node {
            case .null: left -= 4
            case .bool(let value): left -= value ? 4 : 5
            case .number(let literal): left -= literal.utf8.count
            case .string(let value): left -= FuzzJSON.quotedSize(value)
            case .array(let items):
                left -= 1 + max(items.count, 1)
                for item in items where left >= 0 { guard count(item) else { return false } }
            case .object(let fields):
                left -= 1 + max(fields.count, 1) + fields.count
                for (key, value) in fields where left >= 0 {
                    left -= FuzzJSON.quotedSize(key)
                    guard count(value) else { return false }
                }
            }
            return left >= 0
        }
        return count(self)
    }

    /// The bytes `quote` writes for `value`.
    static func quotedSize(_ value: String) -> Int {
        var value = value
        return value.withUTF8 { bytes in
            var size = bytes.count + 2
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                size += byte >= 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 ? 1 : 5
            }
            return size
        }
    }

    public subscript(key: String) -> FuzzJSON? {
        if case .object(let fields) = self { return fields.first { $0.0 == key }?.1 }
        return nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x0a, 0x0d, 0x09].contains(bytes[at]) { at += 1 }
        }

        mutating func value() throws -> FuzzJSON {
            skipSpace()
            guard at < bytes.count else { throw ParseError() }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var fields: [(String, FuzzJSON)] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard case .string(let key) = try value() else { throw ParseError() }
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw ParseError() }
                    at += 1
                    fields.append((key, try value()))
                    skipSpace()
                    guard at < bytes.count else { throw ParseError() }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    guard bytes[at] == UInt8(ascii: "}") else { throw ParseError() }
                    at += 1
                    return .object(fields)
                }
            case UInt8(ascii: "["):
                at += 1
                var items: [FuzzJSON] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                while true {
                    items.append(try value())
                    skipSpace()
                    guard at < bytes.count else { throw ParseError() }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    guard bytes[at] == UInt8(ascii: "]") else { throw ParseError() }
                    at += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                let start = at
                at += 1
                while at < bytes.count, bytes[at] != UInt8(ascii: "\"") { at += bytes[at] == UInt8(ascii: "\\") ? 2 : 1 }
                at += 1
                let literal = String(decoding: bytes[start..<at], as: UTF8.self)
                // The standard decoder does the escapes.
                guard let decoded = try? JSONDecoder().decode(String.self, from: Data(literal.utf8)) else { throw ParseError() }
                return .string(decoded)
            case UInt8(ascii: "t"): at += 4; return .bool(true)
            case UInt8(ascii: "f"): at += 5; return .bool(false)
            case UInt8(ascii: "n"): at += 4; return .null
            default:
                let start = at
                while at < bytes.count, "+-0123456789.eE".utf8.contains(bytes[at]) { at += 1 }
                guard at > start else { throw ParseError() }
                return .number(String(decoding: bytes[start..<at], as: UTF8.self))
            }
        }
    }
}

// MARK: Hostile material

public enum FuzzMaterial {
    public static let numbers = [
        "0", "-0", "1", "-1", "2", "3", "0.5", "-0.5", "1.5", "0.0001", "1e-320", "4.9e-324", "1e308", "-1e308",
        "1.7976931348623157e308", "1e309", "-1e309", "1e400", "2147483647", "2147483648", "-2147483648",
        "-2147483649", "4294967295", "4294967296", "9007199254740992", "9007199254740993", "8999999999999999",
        "9e15", "9.1e15", "-9e15", "10000000", "10000001", "16383", "16384", "65535", "65536", "100", "101", "255",
        "256", "257", "6", "7", "9", "10", "64", "1000", "1024", "1025", "300", "301", "268402689", "268402690",
        "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "123456789012345678901234567890", "1.0000000000000002", "0.30000000000000004", "1E2", "1e+2", "1e-2",
        "0e0", "-0.0", "360", "-360", "720.5", "1e6", "1e7", "3e9", "50000000", "50000001",
        String(repeating: "9", count: 400), "0." + String(repeating: "0", count: 400) + "1",
    ]

    public static func strings(sandbox: String) -> [String] {
        [
            "", " ", "a", "x.jpg", "photos", "../photos", "../../photos", "./photos", "photos/", "photos//a",
            "../x", "../../../x", "..", ".", "/", "//", "\(sandbox)/abs/x", "\(sandbox)/abs/{stem}.jpg",
            "\(sandbox)/jobs/../photos", "%2e%2e/x", "..%2f..%2fx", "%2E%2E%2F", "{stem}", "{stem}.{ext}",
            "{dir}/{stem}.jpg", "out/{dir}/../../{stem}.jpg", "out/{name}/{key}.webp", "out/{stem", "out/stem}",
            "out/{unknown}.jpg", "out/{}.jpg", "out/{{stem}}.jpg", "out/", "out/{stem}/", "../out/{stem}.jpg",
            "out/\u{0}x/{stem}.jpg", "a\u{0}b", "\u{0}", "\r\n", "line\r\nbreak", "\t", "\u{202E}gpj.exe",
            "e\u{301}", "caf\u{E9}", "/\u{301}", "../\u{301}x", "..\u{301}", "\u{1F986}", "\u{FEFF}", "\u{FFFF}",
            "\u{10FFFF}", "\u{7F}", "#fff", "#ffffff", "#ffffffff", "#ggg", "#", "#12345", "#fffffffff", "red",
            "http://127.0.0.1/x.jpg", "https://example.invalid/a.png", "ftp://x/y", "file:///etc/passwd",
            "http://", "http://[::1]:99999/x", "HTTP://EXAMPLE.COM:80/A%2F..%2Fb.jpg", "javascript:alert(1)",
            "12h", "0s", "7d", "1w", "-1d", "1e308w", "infs", "nans", "NaN", "inf", "99999999999999999999w", "h",
            "jpeg", "webp", "png", "avif", "tiff", "gif", "auto", "bmp", "cover", "contain", "fill", "inside",
            "outside", "none", "error", "warning", "truncated", "always", "never", "srgb", "keep", "horizontal",
            "attention", "entropy", "centre", "north", "southeast", "over", "xor", "4:4:4", "4:2:0", "lanczos3",
            "*.jpg", "**", "**/*.png", "[", "[!a]*", "[a-", "\\", "\\\\", "*", "?", "photos/**/..", "~", "$HOME",
            String(repeating: "a", count: 300), String(repeating: "../", count: 40) + "x",
            String(repeating: "é", count: 5000), String(repeating: "{stem}", count: 200),
        ]
    }

    /// Numbers a JSON reader takes and a range check may miss: beyond 32 bits, beyond what a
    /// Double-to-Int conversion survives once scaled, or just enormous.
    public static let largeNumbers = [
        "2147483648", "4294967296", "3e9", "8999999999999999", "10000001", "50000000", "1e12", "1e16", "1e19",
        "9.3e18", "1e300", "1.7976931348623157e308", "-2147483649", "-1e19", "65536", "1e6",
    ]

    /// Header-, name- and key-shaped strings for object keys.
    public static let keys = [
        "", " ", "version", "Version", "name", "sources", "outputs", "path", "glob", "list", "url", "key", "op",
        "type", "chain", "format", "state", "cache", "unknown", "__proto__", "constructor", "\u{0}", "ключ",
        "X-Header", "Bad Header", "a:b", "\u{1F986}", String(repeating: "k", count: 1000),
    ]

    /// One value of any type, mostly from the lists above (`strings` is `strings(sandbox:)`).
    public static func value(_ rng: inout FuzzRandom, strings: [String]) -> FuzzJSON {
        switch rng.below(10) {
        case 0: return .null
        case 1: return .bool(rng.chance(0.5))
        case 2, 3: return .number(rng.pick(numbers))
        case 4, 5, 6: return .string(rng.pick(strings))
        case 7: return .array((0..<rng.below(4)).map { _ in .number(rng.pick(numbers)) })
        case 8: return .object([])
        default: return .array([])
        }
    }

    /// Half a case's largest size, made once.
    public static let huge = String(repeating: "0123456789abcdef", count: JobFileMutator.largestCase / 2 / 16)
}

// MARK: Job files

/// Mutations of job files: wrong types, ranges, unicode, huge numbers, deep nesting, long strings,
/// duplicate keys, unknown keys, steps and formats from the test suite spliced in, and damage to
/// the text itself (truncation, stray characters, a byte-order mark, lone surrogates). A case is at
/// most `largestCase` bytes, but for the few made on purpose at the job-file limit and just over it.
public struct JobFileMutator {
    /// 1 MiB: a mutation that would grow a case past it is not made (one that repeats a long string
    /// thousands of times once made an 8.9 GB case that took the machine's memory).
    public static let largestCase = 1 << 20

    public let seeds: [FuzzJSON]
    let ops: [FuzzJSON]
    let formats: [FuzzJSON]
    let sandbox: String
    let strings: [String]
    /// Every key the seeds use, to add where it does not belong.
    let seedKeys: [String]

    public init(seeds: [FuzzJSON], ops: [FuzzJSON], formats: [FuzzJSON], sandbox: String) {
        self.seeds = seeds
        self.ops = ops
        self.formats = formats
        self.sandbox = sandbox
        strings = FuzzMaterial.strings(sandbox: sandbox)
        var keys = Set<String>()
        func collect(_ node: FuzzJSON) {
            switch node {
            case .object(let fields): for (key, value) in fields { keys.insert(key); collect(value) }
            case .array(let items): items.forEach(collect)
            default: break
            }
        }
        (seeds + ops + formats).forEach(collect)
        seedKeys = keys.sorted()
    }

    /// One case: a seed with one to four mutations, sometimes with its text damaged afterwards;
    /// a third of the cases change only a value or two, so they get past the first check.
    public func makeCase(_ rng: inout FuzzRandom) -> String {
        if rng.chance(0.0005) { return makeLimitCase(&rng) }
        if rng.chance(0.33) { return makeGentleCase(&rng) }
        var document = rng.pick(seeds)
        for _ in 0..<(1 + rng.below(4)) {
            let mutated = mutate(document, &rng)
            if mutated.fits(within: Self.largestCase) { document = mutated }
        }
        var text = document.text
        if rng.chance(0.1) {
            let damaged = damage(text, &rng)
            if damaged.utf8.count <= Self.largestCase { text = damaged }
        }
        return text
    }

    /// A gentle case grown to exactly the job-file limit or one byte over it, by trailing blanks or
    /// a long `$schema` (which runner ignores): read whole, or refused by its size.
    public func makeLimitCase(_ rng: inout FuzzRandom) -> String {
        let size = Job.largestFile + rng.below(2)
        let document = gentleDocument(&rng)
        guard case .object(let fields) = document, rng.chance(0.5) else {
            let text = document.text
            return text + String(repeating: rng.pick([" ", "\n", "\t"]), count: max(size - text.utf8.count, 0))
        }
        let padding = size - FuzzJSON.object([("$schema", .string(""))] + fields).text.utf8.count
        return FuzzJSON.object([("$schema", .string(String(repeating: "x", count: padding)))] + fields).text
    }

    /// A case that keeps the seed's shape: one or two values changed (for runs of the binary).
    /// With `numbers`, only numbers change, half of the time to one that is large but valid JSON.
    public func makeGentleCase(_ rng: inout FuzzRandom, numbers: Bool = false) -> String {
        gentleDocument(&rng, numbers: numbers).text
    }

    func gentleDocument(_ rng: inout FuzzRandom, numbers: Bool = false) -> FuzzJSON {
        var document = rng.pick(seeds)
        for _ in 0..<(1 + rng.below(2)) { document = mutate(document, &rng, gentle: true, numbersOnly: numbers) }
        return document
    }

    private func count(_ node: FuzzJSON) -> Int {
        switch node {
        case .array(let items): return 1 + items.reduce(0) { $0 + count($1) }
        case .object(let fields): return 1 + fields.reduce(0) { $0 + count($1.1) }
        default: return 1
        }
    }

    /// Which nodes a mutation may pick: any, scalars (numbers, strings, booleans), or numbers.
    enum Focus { case any, scalars, numbers }

    private func candidates(_ node: FuzzJSON, _ focus: Focus) -> Int {
        var own = 0
        switch (node, focus) {
        case (_, .any), (.number, _): own = 1
        case (.string, .scalars), (.bool, .scalars), (.null, .scalars): own = 1
        default: own = 0
        }
        switch node {
        case .array(let items): return own + items.reduce(0) { $0 + candidates($1, focus) }
        case .object(let fields): return own + fields.reduce(0) { $0 + candidates($1.1, focus) }
        default: return own
        }
    }

    /// Changes one node; a gentle change picks among the numbers, strings and booleans only.
    func mutate(_ document: FuzzJSON, _ rng: inout FuzzRandom, gentle: Bool = false, numbersOnly: Bool = false) -> FuzzJSON {
        let focus: Focus = numbersOnly ? .numbers : gentle ? .scalars : .any
        let target = rng.below(candidates(document, focus))
        var seen = 0
        return rebuild(document, target: target, seen: &seen, parentKey: nil, rng: &rng, gentle: gentle, focus: focus)
    }

    private func rebuild(_ node: FuzzJSON, target: Int, seen: inout Int, parentKey: String?,
                         rng: inout FuzzRandom, gentle: Bool, focus: Focus) -> FuzzJSON {
        if candidates(node, focus) - childCandidates(node, focus) == 1 {
            let index = seen
            seen += 1
            if index == target {
                if focus == .numbers && rng.chance(0.5) { return .number(rng.pick(FuzzMaterial.largeNumbers)) }
                return change(node, parentKey: parentKey, rng: &rng, gentle: gentle)
            }
        }
        switch node {
        case .array(let items):
            return .array(items.map { rebuild($0, target: target, seen: &seen, parentKey: parentKey, rng: &rng, gentle: gentle, focus: focus) })
        case .object(let fields):
            return .object(fields.map { ($0.0, rebuild($0.1, target: target, seen: &seen, parentKey: $0.0, rng: &rng, gentle: gentle, focus: focus)) })
        default:
            return node
        }
    }

    private func childCandidates(_ node: FuzzJSON, _ focus: Focus) -> Int {
        switch node {
        case .array(let items): return items.reduce(0) { $0 + candidates($1, focus) }
        case .object(let fields): return fields.reduce(0) { $0 + candidates($1.1, focus) }
        default: return 0
        }
    }

    private func change(_ node: FuzzJSON, parentKey: String?, rng: inout FuzzRandom, gentle: Bool) -> FuzzJSON {
        // Splice in steps and formats the tests use.
        if parentKey == "chain", case .array(var steps) = node, rng.chance(0.5) {
            let step = rng.pick(ops)
            if steps.isEmpty || rng.chance(0.5) { steps.insert(step, at: rng.below(steps.count + 1)) } else { steps[rng.below(steps.count)] = step }
            return .array(steps)
        }
        if parentKey == "format", rng.chance(0.5) { return rng.pick(formats) }
        if gentle {
            switch node {
            case .number: return .number(rng.pick(FuzzMaterial.numbers))
            case .string: return .string(rng.pick(strings))
            case .bool(let flag): return .bool(!flag)
            default: return node
            }
        }
        switch rng.below(16) {
        case 0, 1, 2:
            return FuzzMaterial.value(&rng, strings: strings)
        case 3, 4:
            if case .number = node { return .number(rng.pick(FuzzMaterial.numbers)) }
            if case .string = node { return .string(rng.pick(strings)) }
            return FuzzMaterial.value(&rng, strings: strings)
        case 5:
            // Deep nesting: the JSON reader must refuse it, not overflow the stack.
            // (Deep ones are rare: decoding cost grows with the square of the depth, ~1 s at 512 in a debug build.)
            let depth = rng.chance(0.05) ? rng.pick([511, 512, 513, 1000, 10_000, 100_000]) : rng.pick([2, 10, 50, 100])
            var wrapped = node
            let asObject = rng.chance(0.5)
            var out = ""
            for _ in 0..<depth { out += asObject ? "{\"k\":" : "[" }
            wrapped.write(into: &out)
            for _ in 0..<depth { out += asObject ? "}" : "]" }
            wrapped = .number(out)   // raw text: a number literal is written as is
            return wrapped
        case 6:
            // Long strings; now and then half a case's largest size.
            if rng.chance(0.01) { return .string(FuzzMaterial.huge) }
            let length = rng.chance(0.1) ? 1 + rng.below(20_000) : 1 + rng.below(500)
            return .string(String(repeating: rng.pick(["x", "é", "../", "{stem}", "\u{1F986}", "/"]), count: length))
        default:
            break
        }
        switch node {
        case .object(var fields):
            switch rng.below(5) {
            case 0 where !fields.isEmpty:
                fields.remove(at: rng.below(fields.count))
            case 1 where !fields.isEmpty:
                // A duplicate key: the same name again, with another value or the same one.
                let (key, value) = rng.pick(fields)
                fields.insert((key, rng.chance(0.5) ? value : FuzzMaterial.value(&rng, strings: strings)), at: rng.below(fields.count + 1))
            case 2:
                fields.append((rng.chance(0.7) ? rng.pick(seedKeys) : rng.pick(FuzzMaterial.keys), FuzzMaterial.value(&rng, strings: strings)))
            case 3 where !fields.isEmpty:
                let position = rng.below(fields.count)
                fields[position].0 = rng.chance(0.5) ? fields[position].0.uppercased() : fields[position].0 + " "
            default:
                fields.shuffle(using: &rng)
            }
            return .object(fields)
        case .array(var items):
            switch rng.below(5) {
            case 0 where !items.isEmpty: items.remove(at: rng.below(items.count))
            case 1 where !items.isEmpty: items.append(contentsOf: Array(repeating: rng.pick(items), count: 1 + rng.below(rng.chance(0.1) ? 2000 : 4)))
            case 2: items = []
            case 3: items.append(FuzzMaterial.value(&rng, strings: strings))
            default: items.reverse()
            }
            return .array(items)
        default:
            return FuzzMaterial.value(&rng, strings: strings)
        }
    }

    /// Damage to the text itself.
    func damage(_ text: String, _ rng: inout FuzzRandom) -> String {
        var scalars = Array(text.unicodeScalars)
        let position = rng.below(scalars.count + 1)
        switch rng.below(7) {
        case 0: scalars = Array(scalars[..<position])
        case 1: scalars.insert(contentsOf: rng.pick(["{", "}", "[", "]", "\"", ",", ":", "\\", "\u{0}", "\u{FEFF}", "\\ud800", "\\udfff\\ud800", "/*", "//", "NaN", "Infinity", "'"]).unicodeScalars, at: position)
        case 2 where position < scalars.count: scalars.removeSubrange(position..<min(scalars.count, position + 1 + rng.below(20)))
        case 3: scalars.insert(contentsOf: "\u{FEFF}".unicodeScalars, at: 0)
        case 4: scalars.append(contentsOf: rng.pick([" x", "}", ",", "\u{0}", " {}", "\n\n\n"]).unicodeScalars)
        case 5 where position < scalars.count:
            let end = min(scalars.count, position + 1 + rng.below(200))
            scalars.insert(contentsOf: scalars[position..<end], at: end)
        default: scalars.insert(contentsOf: "\r\n".unicodeScalars, at: position)
        }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars)
        return String(out)
    }
}

extension Array {
    mutating func shuffle(using rng: inout FuzzRandom) {
        guard count > 1 else { return }
        for index in stride(from: count - 1, to: 0, by: -1) { swapAt(index, rng.below(index + 1)) }
    }
}

// MARK: Paths, byte by byte

/// Path arithmetic on bytes, the way the kernel resolves names: `/` separates, `.` and `..`
/// are the only special components. Independent of runner's `Paths`, to check it.
public enum BytePath {
    /// Folds `.`, `..` and repeated slashes; the result is absolute.
    public static func normalize(_ path: String) -> [UInt8] {
        var parts: [ArraySlice<UInt8>] = []
        for part in Array(path.utf8).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if part.elementsEqual([UInt8(ascii: ".")]) { continue }
            if part.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        var out: [UInt8] = []
        for part in parts { out.append(UInt8(ascii: "/")); out.append(contentsOf: part) }
        return out.isEmpty ? [UInt8(ascii: "/")] : out
    }

    /// True when `path`, resolved as the kernel would (symlinks aside), lies strictly inside `root`.
    public static func isInside(_ path: String, root: String) -> Bool {
        let resolved = normalize(path)
        var prefix = normalize(root)
        if prefix != [UInt8(ascii: "/")] { prefix.append(UInt8(ascii: "/")) }
        return resolved.count > prefix.count && resolved.starts(with: prefix)
    }
}

/// Every file and folder below `root` (not following symbolic links), with size and mtime, to
/// tell what a run created or changed.
public struct TreeSnapshot: Equatable {
    public let entries: [String: String]

    public init(_ root: String) {
        var entries: [String: String] = [:]
        func walk(_ folder: String) {
            guard let directory = opendir(folder) else { return }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name == "." || name == ".." { continue }
                let path = folder + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                let kind = info.st_mode & S_IFMT
                entries[path] = "\(kind == S_IFDIR ? "d" : kind == S_IFLNK ? "l" : "f") \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
                if kind == S_IFDIR { walk(path) }
            }
        }
        walk(root)
        self.entries = entries
    }

    /// Paths created or modified since `before`.
    public func changes(since before: TreeSnapshot) -> [String] {
        entries.compactMap { path, value in
            before.entries[path] == value || value.hasPrefix("d") && before.entries[path] != nil ? nil : path
        }.sorted()
    }
}

// MARK: A sandbox for fuzzed jobs

/// A temporary folder laid out for the seed jobs: `jobs/` (where job files go, with the watermarks
/// steps name), `photos/` (small images), `lists/list.txt`, and `fixtures` (a link to the
/// repository's, for jobs/thumbs.json). Removed when released.
public final class FuzzSandbox: @unchecked Sendable {
    public let root: String
    public var jobPath: String { root + "/jobs/job.json" }

    public static var repository: String { (Fixtures.root as NSString).deletingLastPathComponent }

    public init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("runner-fuzz-XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)
        let files = FileManager.default
        for folder in ["jobs/marks", "photos/sub", "lists"] {
            try files.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        for (fixture, name) in [("extra/ladybird.jpg", "photos/a.jpg"), ("formats/alpha.png", "photos/b.png"),
                                ("formats/animated.gif", "photos/sub/c.gif"), ("formats/grey.jpg", "photos/sub/d.jpg"),
                                ("watermark.png", "jobs/watermark.png"), ("watermark.png", "jobs/marks/watermark.png")] {
            try files.copyItem(atPath: Fixtures.path(fixture), toPath: root + "/" + name)
        }
        try "../photos/a.jpg\n# a comment\n\nhttp://127.0.0.1:9/l.jpg\n../photos/sub/d.jpg\n"
            .write(toFile: root + "/lists/list.txt", atomically: true, encoding: .utf8)
        try files.createSymbolicLink(atPath: root + "/fixtures", withDestinationPath: Fixtures.root)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// The repository's jobs/*.json and Tests/fuzz/seeds/jobs/*.json.
    public static func seedJobs() throws -> [FuzzJSON] {
        var seeds: [FuzzJSON] = []
        for folder in [repository + "/jobs", repository + "/Tests/fuzz/seeds/jobs"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder).sorted() where name.hasSuffix(".json") {
                seeds.append(try FuzzJSON(parsing: try String(contentsOfFile: folder + "/" + name, encoding: .utf8)))
            }
        }
        return seeds
    }

    /// Chain steps or formats collected from the tests (Tests/fuzz/seeds/ops.json, formats.json).
    public static func pool(_ name: String) throws -> [FuzzJSON] {
        let text = try String(contentsOfFile: repository + "/Tests/fuzz/seeds/\(name).json", encoding: .utf8)
        guard case .array(let items) = try FuzzJSON(parsing: text) else { throw FuzzJSON.ParseError() }
        return items
    }
}

// MARK: Output paths, list files and URLs

/// Hostile output templates, list-file lines and URLs: traversal (`..`, `%2e%2e`, `..%2F`),
/// combining marks after a slash (one grapheme to Swift, two names to the kernel), NUL, CR and
/// CRLF, very long lines, right-to-left marks, absolute paths.
public struct PathMaterial {
    public let sandbox: String
    /// Where every relative URL path starts: a server path that answers any name with an image.
    public let urlBase: String

    public init(sandbox: String, urlBase: String = "http://127.0.0.1:9/img/") {
        self.sandbox = sandbox
        self.urlBase = urlBase
    }

    static let templatePrefixes = ["out", "../out", "./out", "out//deep", "out/..", "out/./x", "o\u{301}", "out/\u{301}",
                                   "out/%2e%2e", "out\\x", "out/ sp", "out/\u{202E}", "..", "."]
    static let templatePieces = ["{dir}", "{stem}", "{ext}", "{name}", "{key}", "..", ".", "", "x", "\u{301}", "%2e%2e",
                                 "-", "_", "a b", "\r", "{stem}.{ext}", "{dir}/..", "../{stem}", "\u{301}{stem}"]
    static let lineStarts = ["../photos/a.jpg", "../photos/sub/d.jpg", "a.jpg", "../../x.jpg", "./x.jpg", "..\u{301}/x.jpg",
                             "../\u{301}z/x.jpg", "%2e%2e/x.jpg", "x\u{0}y.jpg", "x.jpg\r", "  ../photos/a.jpg  ",
                             "sub/../../x.jpg", "\u{202E}gpj.x", "#comment", "", "../lists/../photos/a.jpg",
                             "\u{301}/x.jpg", "../\u{301}../\u{301}x.jpg", "/\u{301}x.jpg", "..", "../", "x/"]
    static let urlPaths = ["a.jpg", "..%2F..%2Fx.jpg", "%2e%2e/%2e%2e/x.jpg", "a/../../b.jpg", "..%2F%CC%81x.jpg",
                           "%CC%81/x.jpg", "%2F%CC%81x/y.jpg", "%00.jpg", "a%00b/c.jpg", "a%2Fb.jpg", "", "x?y=../z",
                           "a.jpg#../../frag", "..%5C..%5Cx.jpg", "%0D%0Ax.jpg", "%E2%80%AEgpj.x", "..", "%2e",
                           "a/%2e%2e%2f%2e%2e%2fb.jpg", "%CC%81..%2Fx.jpg", "deep/er/than/that/%2E%2E/x.jpg"]

    public func template(_ rng: inout FuzzRandom) -> String {
        var path = rng.chance(0.1) ? sandbox + "/abs" : rng.pick(Self.templatePrefixes)
        for _ in 0..<(1 + rng.below(4)) {
            path += rng.pick(["/", "/", "", "."]) + rng.pick(Self.templatePieces)
        }
        if !path.contains("{") || rng.chance(0.5) { path += "/{stem}" + rng.pick([".jpg", ".{ext}", "", "-{key}.png"]) }
        return path
    }

    /// A list-file line: local, absolute inside the sandbox, long, or a URL.
    public func line(_ rng: inout FuzzRandom) -> String {
        switch rng.below(10) {
        case 0, 1, 2: return urlBase + urlPath(&rng)
        case 3: return sandbox + "/photos/" + rng.pick(Self.lineStarts)
        case 4: return String(repeating: rng.pick(["a", "../", "\u{301}", "%2e"]), count: 1 + rng.below(20_000)) + ".jpg"
        default:
            var line = rng.pick(Self.lineStarts)
            if rng.chance(0.3) { line = rng.pick(Self.lineStarts) + "/" + line }
            return line
        }
    }

    public func urlPath(_ rng: inout FuzzRandom) -> String {
        (0..<(1 + rng.below(3))).map { _ in rng.pick(Self.urlPaths) }.joined(separator: rng.pick(["/", "/", "%2F"]))
    }

    /// The list file's bytes: lines joined by LF, CRLF or CR.
    public func listFile(_ lines: [String], _ rng: inout FuzzRandom) -> Data {
        Data(lines.joined(separator: rng.pick(["\n", "\r\n", "\n", "\r"])).utf8) + (rng.chance(0.5) ? Data("\n".utf8) : Data())
    }

    /// The folder a template's literal prefix names, worked out on bytes: what the output must stay in.
    public static func root(ofTemplate written: String, base: String) -> String {
        let absolute = Array((written.hasPrefix("/") ? written : base + "/" + written).utf8)
        let literal = absolute.prefix { $0 != UInt8(ascii: "{") } + Array("x".utf8)
        let folder = literal[..<(literal.lastIndex(of: UInt8(ascii: "/")) ?? literal.startIndex)]
        return String(decoding: BytePath.normalize(String(decoding: folder, as: UTF8.self)), as: UTF8.self)
    }

    /// Why `outputPath` is not a safe place for an output of the template rooted at `root`, or nil.
    public static func problem(outputPath: String, root: String, temporary: String) -> String? {
        let bytes = Array(outputPath.utf8)
        if bytes.contains(0) { return "contains NUL" }
        if BytePath.normalize(outputPath) != bytes { return "is not normal: the kernel resolves it elsewhere" }
        if !BytePath.isInside(outputPath, root: root) { return "is outside \(root)" }
        let slash = UInt8(ascii: "/")
        let folder = bytes[..<(bytes.lastIndex(of: slash) ?? 0)]
        let temporaryBytes = Array(temporary.utf8)
        if !temporaryBytes.starts(with: folder + [slash]) || temporaryBytes[(folder.count + 1)...].contains(slash) {
            return "has its temporary file \(temporary) in another folder"
        }
        return nil
    }
}
