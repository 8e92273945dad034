import Support
/// Strings held as 128-bit digests: tens of megabytes for a million, not hundreds. The halves come
/// from unrelated hashes (FNV-1a, seeded SipHash): a false match is about n²/2¹²⁹ (10⁻²⁷ for a million).
package struct DigestSet {
    private var digests: Set<UInt128> = []

    package init() {}

    /// True if `text` was not in the set yet.
    package mutating func insert(_ text: String) -> Bool {
        digests.insert(Self.digest(text)).inserted
    }

    package func contains(_ text: String) -> Bool {
        digests.contains(Self.digest(text))
    }

    package static func digest(_ text: String) -> UInt128 {
        var seeded = Hasher()
        seeded.combine(text)
        return UInt128(StableHash.value(text)) << 64 | UInt128(UInt64(bitPattern: Int64(seeded.finalize())))
    }
}
