#if canImport(Glibc)
import Glibc
#endif

/// FNV-1a, 64 bit: a stable hash for fingerprints and the `{key}` template token.
/// Change detection only; nothing here relies on it resisting an attacker.
public struct StableHash: Sendable {
    private static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01b3

    private var state = offsetBasis

    public init() {}

    private init(state: UInt64) { self.state = state }

    /// Through the string's contiguous bytes: the generic `UTF8View` walk was a seventh of
    /// planning a 10M-URL list. Same value as `combine(bytes: text.utf8)`.
    public mutating func combine(_ text: String) {
        var text = text
        text.withUTF8 { combine(bytes: UnsafeRawBufferPointer($0)) }
        state = (state ^ 0xff) &* Self.prime
    }

    /// Raw bytes, such as a file's content.
    public mutating func combine(bytes: some Sequence<UInt8>) {
        for byte in bytes {
            state = (state ^ UInt64(byte)) &* Self.prime
        }
        // A separator byte keeps ("ab","c") and ("a","bc") apart.
        state = (state ^ 0xff) &* Self.prime
    }

    /// Bytes as they stream in (a downloaded original's content identity).
    public mutating func combine(bytes: UnsafeRawBufferPointer) {
        var state = self.state
        for byte in bytes {
            state = (state ^ UInt64(byte)) &* Self.prime
        }
        self.state = state
    }

    /// What `combine(bytes:)` gives from a fresh hash for each buffer (a downloaded original's
    /// content identity), computed four buffers at a time. One buffer's hash is a single chain, a
    /// multiply per byte (~4 cycles a byte, ~0.5 s for 2,000 small images); interleaving four
    /// chains runs them side by side in the same cycles, about twice as fast as one after another.
    package static func contentHashes(of buffers: [UnsafeRawBufferPointer]) -> [StableHash] {
        var states = [UInt64](repeating: offsetBasis, count: buffers.count)
        var lanes: [(index: Int, position: Int)] = []
        var next = 0
        while true {
            while lanes.count < 4 && next < buffers.count {
                lanes.append((next, 0))
                next += 1
            }
            guard !lanes.isEmpty else { break }
            let step = lanes.map { buffers[$0.index].count - $0.position }.min()!
            if step > 0 {
                // Four lanes; missing ones repeat the last lane and their results are dropped.
                func lane(_ number: Int) -> (start: UnsafePointer<UInt8>, state: UInt64) {
                    let (index, position) = lanes[min(number, lanes.count - 1)]
                    return (buffers[index].baseAddress!.assumingMemoryBound(to: UInt8.self) + position, states[index])
                }
                let (p0, p1, p2, p3) = (lane(0).start, lane(1).start, lane(2).start, lane(3).start)
                var (s0, s1, s2, s3) = (lane(0).state, lane(1).state, lane(2).state, lane(3).state)
                for i in 0..<step {
                    s0 = (s0 ^ UInt64(p0[i])) &* prime
                    s1 = (s1 ^ UInt64(p1[i])) &* prime
                    s2 = (s2 ^ UInt64(p2[i])) &* prime
                    s3 = (s3 ^ UInt64(p3[i])) &* prime
                }
                for (number, state) in [s0, s1, s2, s3].prefix(lanes.count).enumerated() { states[lanes[number].index] = state }
            }
            lanes = lanes.map { ($0.index, $0.position + step) }.filter { $0.position < buffers[$0.index].count }
        }
        return states.map(StableHash.init(state:))
    }

    /// `combine(bytes:)` over the whole file at `path` from a fresh hash (what the originals cache
    /// records of a download), read 1 MiB at a time; nil when it cannot be read.
    package static func ofFile(_ path: String) -> StableHash? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var hash = StableHash()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 { if errno == EINTR { continue }; return nil }
            if count == 0 { return hash }
            hash.combine(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    public var value: UInt64 { state }

    public var hex: String {
        let digits = String(state, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    public static func value(_ text: String) -> UInt64 {
        var hash = StableHash()
        hash.combine(text)
        return hash.value
    }

    public static func hex(_ parts: String...) -> String {
        var hash = StableHash()
        for part in parts { hash.combine(part) }
        return hash.hex
    }
}
