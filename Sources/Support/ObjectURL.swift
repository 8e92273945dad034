/// A place in a bucket written `s3://BUCKET/KEY`: how a bucket source, an output path and the
/// manifest name it. The key is the rest as written (any bytes; empty for a whole bucket).
package struct ObjectURL: Sendable, Equatable, CustomStringConvertible {
    package static let scheme = "s3://"
    package let bucket: String
    package let key: String

    /// nil unless `text` starts with `s3://` and names a bucket.
    package init?(_ text: String) {
        guard text.hasPrefix(Self.scheme) else { return nil }
        let rest = text.dropFirst(Self.scheme.count)
        let bucket = rest.prefix { $0 != "/" }
        guard !bucket.isEmpty else { return nil }
        (self.bucket, key) = (String(bucket), String(rest.dropFirst(bucket.count + 1)))
    }

    package init(bucket: String, key: String) { (self.bucket, self.key) = (bucket, key) }

    package var description: String { Self.scheme + bucket + "/" + key }

    /// Whether a path names an object rather than a file.
    package static func names(_ path: String) -> Bool { path.hasPrefix(scheme) }
}
