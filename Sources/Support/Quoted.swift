/// A value from a job file or the command line as an error message shows it: whole when short,
/// else its first characters and its length, so a 10 MB `format.type` makes an error line of a
/// hundred bytes rather than of 10 MB.
public enum Quoted {
    /// In double quotes: `"jpgg"`, or `"xxxxxxxx…" (10000000 characters)`.
    public static func value(_ text: String, limit: Int = 60) -> String {
        guard let (prefix, length) = cut(text, limit) else { return "\"\(text)\"" }
        return "\"\(prefix)…\" (\(length) characters)"
    }

    /// As it stands, for paths: `/srv/xxxx… (10000000 characters)`.
    public static func text(_ text: String, limit: Int = 200) -> String {
        guard let (prefix, length) = cut(text, limit) else { return text }
        return "\(prefix)… (\(length) characters)"
    }

    /// A bound in bytes as documented: `16 MiB`, `64 KiB`, else `1000 bytes`.
    package static func bytes(_ count: Int) -> String {
        count % (1 << 20) == 0 ? "\(count >> 20) MiB" : count % (1 << 10) == 0 ? "\(count >> 10) KiB" : "\(count) bytes"
    }

    private static func cut(_ text: String, _ limit: Int) -> (Substring, Int)? {
        // The byte count bounds the character count from above, and costs nothing to read.
        guard text.utf8.count > limit else { return nil }
        let length = text.count
        return length > limit ? (text.prefix(limit - 1), length) : nil
    }
}
