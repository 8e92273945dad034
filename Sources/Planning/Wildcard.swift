#if canImport(Glibc)
import Glibc
#endif

/// A shell wildcard pattern, made once and matched against many names: `*` any run (`/` included),
/// `?` one character, `[…]` one of a set (`a-z`, `!` or `^` to negate), `\` escapes. Matched by
/// character (glibc's fnmatch matches `?` and `[é]` against one byte even in a UTF-8 locale), but by
/// fnmatch (faster) for an ASCII pattern without `?`, `[` or `\`, which matches the same bytes either way.
package struct Wildcard {
    private enum Token: Equatable {
        case literal(Character)
        case anyOne
        case anyRun
        case set(negated: Bool, ranges: [ClosedRange<Character>])
    }

    private enum Matcher {
        case bytes(String, flags: Int32)
        /// nil tokens: a pattern that ends in a lone `\`, which matches nothing (as in fnmatch).
        case characters([Token]?, caseInsensitive: Bool)
    }

    private let matcher: Matcher

    package init(_ pattern: String, caseInsensitive: Bool) {
        let bytewise = !pattern.utf8.contains { $0 >= 0x80 || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "\\") }
        self.init(pattern, caseInsensitive: caseInsensitive, bytewise: bytewise)
    }

    /// Always by character: for comparing the two ways.
    package init(matchingCharacters pattern: String) { self.init(pattern, caseInsensitive: false, bytewise: false) }

    private init(_ pattern: String, caseInsensitive: Bool, bytewise: Bool) {
        matcher = bytewise ? .bytes(pattern, flags: caseInsensitive ? (1 << 4) /* FNM_CASEFOLD */ : 0)
            : .characters(Self.tokens(Array(caseInsensitive ? pattern.lowercased() : pattern)), caseInsensitive: caseInsensitive)
    }

    package func matches(_ name: String) -> Bool {
        switch matcher {
        case .bytes(let pattern, let flags): fnmatch(pattern, name, flags) == 0
        case .characters(let tokens, let caseInsensitive):
            tokens.map { Self.matches($0, Array(caseInsensitive ? name.lowercased() : name)) } ?? false
        }
    }

    private static func tokens(_ pattern: [Character]) -> [Token]? {
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            switch pattern[index] {
            case "*": if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?": tokens.append(.anyOne)
            case "\\":
                index += 1
                guard index < pattern.count else { return nil }
                tokens.append(.literal(pattern[index]))
            case "[":
                guard let (set, end) = Self.set(in: pattern, at: index) else { tokens.append(.literal("[")); break }
                tokens.append(set)
                index = end
            case let character: tokens.append(.literal(character))
            }
            index += 1
        }
        return tokens
    }

    /// The set opened at `start`, and the index of its `]`; nil when it is never closed (then `[`
    /// is itself). A `]` first in the set is a member; `a-z` is a range; `\` escapes.
    private static func set(in pattern: [Character], at start: Int) -> (Token, Int)? {
        var index = start + 1
        let negated = index < pattern.count && (pattern[index] == "!" || pattern[index] == "^")
        if negated { index += 1 }
        var ranges: [ClosedRange<Character>] = []
        var first = true
        while index < pattern.count {
            if pattern[index] == "]" && !first { return (.set(negated: negated, ranges: ranges), index) }
            first = false
            var low = pattern[index]
            if low == "\\" && index + 1 < pattern.count { index += 1; low = pattern[index] }
            if index + 2 < pattern.count && pattern[index + 1] == "-" && pattern[index + 2] != "]" {
                var high = pattern[index + 2]
                index += 2
                if high == "\\" && index + 1 < pattern.count { index += 1; high = pattern[index] }
                if low <= high { ranges.append(low...high) }
            } else {
                ranges.append(low...low)
            }
            index += 1
        }
        return nil
    }

    /// Whether `name` matches: greedy, going back to the last `*` on a mismatch (linear in the
    /// name for each `*`, never exponential).
    private static func matches(_ tokens: [Token], _ name: [Character]) -> Bool {
        var (token, position) = (0, 0)
        var lastRun: (token: Int, position: Int)? = nil
        while position < name.count {
            if token < tokens.count, tokens[token] == .anyRun {
                lastRun = (token, position)
                token += 1
            } else if token < tokens.count, matches(tokens[token], name[position]) {
                token += 1
                position += 1
            } else if let run = lastRun {
                lastRun = (run.token, run.position + 1)
                (token, position) = (run.token + 1, run.position + 1)
            } else {
                return false
            }
        }
        while token < tokens.count && tokens[token] == .anyRun { token += 1 }
        return token == tokens.count
    }

    private static func matches(_ token: Token, _ character: Character) -> Bool {
        switch token {
        case .literal(let literal): literal == character
        case .anyOne: true
        case .anyRun: false
        case .set(let negated, let ranges): ranges.contains { $0.contains(character) } != negated
        }
    }
}
