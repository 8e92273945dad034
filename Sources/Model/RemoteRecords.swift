import Foundation

/// A URL on the failed-URL blacklist (SDWebImage's `failedURLs`, kept across runs): why, and since when.
public struct BlacklistEntry: Sendable, Codable {
    public let url: String
    public let kind: String
    public let httpStatus: Int?
    public let message: String
    public let firstSeen: Date
    public let lastSeen: Date
    public let count: Int

    package init(url: String, kind: String, httpStatus: Int?, message: String, firstSeen: Date, lastSeen: Date, count: Int) {
        (self.url, self.kind, self.httpStatus, self.message) = (url, kind, httpStatus, message)
        (self.firstSeen, self.lastSeen, self.count) = (firstSeen, lastSeen, count)
    }
}

/// A downloaded original in the cache folder, with the validators for conditional requests.
package struct CachedOriginal: Sendable, Codable {
    package let sourceKey: String
    package let url: String
    package let file: String
    package let etag: String?
    package let lastModified: String?
    package let contentHash: String
    package let size: Int
    package let fetchedAt: Double
    package var validatedAt: Double
    package var usedAt: Double

    package init(sourceKey: String, url: String, file: String, etag: String?, lastModified: String?, contentHash: String,
                 size: Int, fetchedAt: Double, validatedAt: Double, usedAt: Double) {
        (self.sourceKey, self.url, self.file, self.etag, self.lastModified) = (sourceKey, url, file, etag, lastModified)
        (self.contentHash, self.size, self.fetchedAt, self.validatedAt, self.usedAt) = (contentHash, size, fetchedAt, validatedAt, usedAt)
    }
}
