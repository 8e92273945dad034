import Support
/// A job file problem, named by its location (`outputs[0].chain[2].sigma: must be > 0`), a syntax
/// error by line and column (`12:5: expected ',' or '}'`); once `located` in the text, both.
public struct JobFileError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The key path; empty for the file as a whole and for syntax errors.
    public let location: String
    public let message: String
    /// Where the error is in the text: a syntax error's own place, or a key path's once located.
    public let position: Position?
    /// The key of the object at `location` the error is about (an unknown key), so that locating
    /// points at the key rather than at its object.
    package let member: String?

    public struct Position: Equatable, Sendable {
        public let line: Int
        public let column: Int
    }

    public init(_ location: String, _ message: String, member: String? = nil, position: Position? = nil) {
        (self.location, self.message, self.member, self.position) = (location, message, member, position)
    }

    package init(syntax: JSONSyntaxError) {
        self.init("", syntax.message, position: Position(line: syntax.line, column: syntax.column))
    }

    /// The error with the line and column of its key path in `text` (the job file it was found in),
    /// as a syntax error has them. Errors about the file as a whole have none.
    public func located(in text: String) -> JobFileError {
        guard position == nil, !location.isEmpty || member != nil,
              let (line, column) = JSONValue.position(of: location, member: member, in: text) else { return self }
        return JobFileError(location, message, member: member, position: Position(line: line, column: column))
    }

    public var description: String {
        let named = location.isEmpty ? message : "\(location): \(message)"
        return position.map { "\($0.line):\($0.column): \(named)" } ?? named
    }

    /// The error after the job file's name, its position compiler style:
    /// `thumbs.json:12:5: expected ',' or '}'`, `thumbs.json:3:14: outputs[0].chain[0].width: must be a positive integer`,
    /// `thumbs.json: cannot read job file …`.
    public func described(in file: String) -> String {
        position == nil ? "\(file): \(description)" : "\(file):\(description)"
    }
}

extension JobFileError: ExitCoded {
    public var exitCode: Int32 { ExitStatus.jobFile }
}
