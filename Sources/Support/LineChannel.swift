import Foundation
import Synchronization

/// Newline-framed JSON messages over a pair of pipe descriptors: the wire between the
/// supervisor and its worker processes. JSON never contains a raw newline, so one line is one message.
package final class LineChannel {
    private let input: Int32
    private let output: Int32
    private var buffer = [UInt8]()
    private var start = 0
    // Made once per channel: a fresh coder per message cost ~0.5 M instructions per image.
    private let decoder = JSONDecoder()
    private let encoder = JSONEncoder()
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    package init(input: Int32, output: Int32) { (self.input, self.output) = (input, output) }

    /// The next message. Throws `closed` at end of stream (the peer exited or closed its end),
    /// `malformed` for a line that is not the expected message (a broken peer, not a dead one), and
    /// `timedOut` when `seconds` pass without a whole line (a peer that stopped answering).
    package func receive<Message: Decodable>(_ type: Message.Type, within seconds: Double? = nil) throws(ChannelError) -> Message {
        let deadline = seconds.map { DispatchTime.now().uptimeNanoseconds + UInt64(max($0, 0) * 1e9) }
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(buffer[start..<newline])
                start = newline + 1
                if start > 65_536 { buffer.removeFirst(start); start = 0 }
                do {
                    return try decoder.decode(Message.self, from: line)
                } catch {
                    throw .malformed(String(decoding: line.prefix(200), as: UTF8.self))
                }
            }
            if let deadline { try wait(until: deadline) }
            let count = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .closed }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// Returns once the input has bytes (or its end) to read; throws `timedOut` at `deadline`.
    private func wait(until deadline: UInt64) throws(ChannelError) {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { throw .timedOut }
            var ready = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Int32.max)))
            let count = poll(&ready, 1, milliseconds)
            if count > 0 { return }
            if count < 0 && errno != EINTR { return }  // let the read report it
        }
    }

    /// Sends one message; false when the peer is gone.
    @discardableResult
    package func send<Message: Encodable>(_ message: Message) -> Bool {
        guard var line = try? encoder.encode(message) else { return false }
        line.append(UInt8(ascii: "\n"))
        return line.withUnsafeBytes { FileDescriptor.writeAll(output, $0) } == nil
    }
}

/// Why no message came.
package enum ChannelError: Error, Equatable, CustomStringConvertible {
    /// End of stream: the peer exited or closed its end.
    case closed
    /// A line that is not the expected message (its start, for the log).
    case malformed(String)
    /// No whole message in the time allowed: the peer stopped answering.
    case timedOut

    package var description: String {
        switch self {
        case .closed: "end of stream"
        case .malformed(let line): "malformed message: \(line)"
        case .timedOut: "no answer in time"
        }
    }
}
