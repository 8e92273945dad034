import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Newline-framed JSON messages over a pair of pipe descriptors: the wire between the
/// supervisor and its worker processes. JSON never contains a raw newline, so one line is one message.
final class LineChannel {
    private let input: Int32
    private let output: Int32
    private var buffer = [UInt8]()
    private var start = 0

    init(input: Int32, output: Int32) {
        self.input = input
        self.output = output
    }

    /// The next message, or nil at end of stream (the peer exited or closed its end).
    func receive<Message: Decodable>(_ type: Message.Type) -> Message? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(buffer[start..<newline])
                start = newline + 1
                if start > 65_536 { buffer.removeFirst(start); start = 0 }
                return try? JSONDecoder().decode(Message.self, from: line)
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// Sends one message; false when the peer is gone.
    @discardableResult
    func send<Message: Encodable>(_ message: Message) -> Bool {
        guard var line = try? JSONEncoder().encode(message) else { return false }
        line.append(UInt8(ascii: "\n"))
        return line.withUnsafeBytes { FileDescriptor.writeAll(output, $0) } == nil
    }
}

/// The supervisor's first message to a new worker.
struct WorkerHello: Codable {
    let jobText: String
    let jobFilePath: String
    let threadsPerImage: Int
    /// Owns the outputs the worker stages.
    let supervisorPID: Int32
}

/// One source and the outputs to render from it.
struct WorkerTask: Codable, Sendable {
    /// Unique in the run; echoed in the reply.
    let id: Int
    let source: String
    let requests: [ImagePipeline.Request]

    private static let lastID = Atomic(0)

    init(source: String, requests: [ImagePipeline.Request]) {
        id = Self.lastID.add(1, ordering: .relaxed).newValue
        self.source = source
        self.requests = requests
    }
}

struct WorkerReply: Codable {
    struct Output: Codable {
        let rendered: ImagePipeline.Rendered?
        let failure: ItemFailure?
    }

    let id: Int
    let outputs: [Output]
    let seconds: Double
}
