import Support
/// A job file problem, named by its exact location (`outputs[0].chain[2].sigma: must be > 0`),
/// or for a JSON syntax error by line and column (`12:5: expected ',' or '}'`).
public struct JobFileError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The key path; empty for the file as a whole and for syntax errors.
    public let location: String
    public let message: String
    /// Where a syntax error is in the text; a document that does not parse has no key paths.
    public let position: Position?

    public struct Position: Equatable, Sendable {
        public let line: Int
        public let column: Int
    }

    public init(_ location: String, _ message: String) {
        self.location = location
        self.message = message
        position = nil
    }

    package init(syntax: JSONSyntaxError) {
        location = ""
        message = syntax.message
        position = Position(line: syntax.line, column: syntax.column)
    }

    public var description: String {
        if let position { return "\(position.line):\(position.column): \(message)" }
        return location.isEmpty ? message : "\(location): \(message)"
    }

    /// The error after the job file's name, a syntax error's position compiler style:
    /// `thumbs.json:12:5: expected ',' or '}'`, `thumbs.json: outputs[0].name: is required`.
    public func described(in file: String) -> String {
        position == nil ? "\(file): \(description)" : "\(file):\(description)"
    }
}

extension JobFileError: ExitCoded {
    public var exitCode: Int32 { ExitStatus.jobFile }
}
