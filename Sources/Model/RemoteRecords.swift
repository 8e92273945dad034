import Foundation

/// A URL on the failed-URL blacklist (SDWebImage's `failedURLs`, kept across runs): why, and since when.
public struct BlacklistEntry: Sendable, Codable {
    public let url: String
    public let kind: BlacklistReason
    public let httpStatus: Int?
    public let message: String
    public let firstSeen: Date
    public let lastSeen: Date
    public let count: Int

    package init(url: String, kind: BlacklistReason, httpStatus: Int?, message: String, firstSeen: Date, lastSeen: Date, count: Int) {
        (self.url, self.kind, self.httpStatus, self.message) = (url, kind, httpStatus, message)
        (self.firstSeen, self.lastSeen, self.count) = (firstSeen, lastSeen, count)
    }
}

/// Why a URL is on the blacklist, as its `kind` column stores it (`rawValue`): a download that failed
/// for good, or a body that is no usable image. One value, so a download over `limits.maxDownloadBytes`
/// is never read back as an image over `limits.maxPixels`.
public enum BlacklistReason: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible {
    case download(Download)
    /// The item failure every output of the body met (`ItemFailure.isBadImageData`: decode, too-large).
    case image(ItemFailure.Kind)

    /// The permanent download failures; transient and local ones never blacklist a URL.
    public enum Download: Sendable, Hashable {
        case httpStatus(Int)
        case tooManyRedirects, forbiddenScheme, malformedURL, tooLarge, notAnImage
    }

    /// The stored and shown spelling: an image's is its item failure kind. Before the two were told
    /// apart a download over the limit was also stored `too-large`; such an entry reads as an image's.
    public var rawValue: String {
        switch self {
        case .download(.httpStatus(let status)): "http-\(status)"
        case .download(.tooManyRedirects): "too-many-redirects"
        case .download(.forbiddenScheme): "forbidden-scheme"
        case .download(.malformedURL): "malformed-url"
        case .download(.tooLarge): "download-too-large"
        case .download(.notAnImage): "not-an-image"
        case .image(let kind): kind.rawValue
        }
    }

    private static let fixed: [BlacklistReason] = [.tooManyRedirects, .forbiddenScheme, .malformedURL, .tooLarge, .notAnImage]
        .map(BlacklistReason.download) + ItemFailure.Kind.allCases.map(BlacklistReason.image)

    public var description: String { rawValue }

    /// Reads a stored spelling; nil for one this version does not know.
    public init?(rawValue spelling: String) {
        if spelling.hasPrefix("http-"), let status = Int(spelling.dropFirst("http-".count)) {
            self = .download(.httpStatus(status))
        } else {
            guard let reason = Self.fixed.first(where: { $0.rawValue == spelling }) else { return nil }
            self = reason
        }
    }

    public var httpStatus: Int? { if case .download(.httpStatus(let status)) = self { status } else { nil } }
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
