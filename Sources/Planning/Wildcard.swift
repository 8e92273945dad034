/// A shell wildcard pattern over characters (`SourceDiscovery.matches`): `*` matches any run
/// (`/` included, as fnmatch without flags), `?` one character, `[…]` one character of a set.
package struct Wildcard {
    private enum Token: Equatable {
        case literal(Character)
        case anyOne
        case anyRun
        case set(negated: Bool, ranges: [ClosedRange<Character>])
    }

    /// nil for a pattern that ends in a lone `\`, which matches nothing (as in fnmatch).
    private let tokens: [Token]?

    package init(_ pattern: [Character]) {
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            switch pattern[index] {
            case "*": if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?": tokens.append(.anyOne)
            case "\\":
                index += 1
                guard index < pattern.count else { self.tokens = nil; return }
                tokens.append(.literal(pattern[index]))
            case "[":
                guard let (set, end) = Self.set(in: pattern, at: index) else { tokens.append(.literal("[")); break }
                tokens.append(set)
                index = end
            case let character: tokens.append(.literal(character))
            }
            index += 1
        }
        self.tokens = tokens
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
    package func matches(_ name: [Character]) -> Bool {
        guard let tokens else { return false }
        var (token, position) = (0, 0)
        var lastRun: (token: Int, position: Int)? = nil
        while position < name.count {
            if token < tokens.count, tokens[token] == .anyRun {
                lastRun = (token, position)
                token += 1
            } else if token < tokens.count, Self.matches(tokens[token], name[position]) {
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
