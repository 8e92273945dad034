/// A job file problem, named by its exact location (`outputs[0].chain[2].sigma: must be > 0`).
public struct JobFileError: Error, Equatable, CustomStringConvertible, Sendable {
    public let location: String
    public let message: String

    public init(_ location: String, _ message: String) {
        self.location = location
        self.message = message
    }

    public var description: String { location.isEmpty ? message : "\(location): \(message)" }
}
