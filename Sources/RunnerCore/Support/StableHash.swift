/// FNV-1a, 64 bit: a stable hash for fingerprints and the `{key}` template token.
/// Change detection only; nothing here relies on it resisting an attacker.
public struct StableHash: Sendable {
    private var state: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func combine(_ text: String) { combine(bytes: text.utf8) }

    /// Raw bytes, such as a file's content.
    public mutating func combine(bytes: some Sequence<UInt8>) {
        for byte in bytes {
            state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        // A separator byte keeps ("ab","c") and ("a","bc") apart.
        state = (state ^ 0xff) &* 0x0000_0100_0000_01b3
    }

    /// Bytes as they stream in (a downloaded original's content identity).
    public mutating func combine(bytes: UnsafeRawBufferPointer) {
        var state = self.state
        for byte in bytes {
            state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        self.state = state
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
