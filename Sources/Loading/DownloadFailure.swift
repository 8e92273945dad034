import Model
import Planning
import ObjectStore

/// Why a download failed, classified once so the blacklist never matches strings.
/// Permanent failures blacklist the URL; transient ones are retried (SDWebImage's rule, made precise).
package struct DownloadFailure: Error, Sendable, CustomStringConvertible {
    package enum Reason: Sendable, Equatable {
        /// A response's status, and what its source's kind says it means.
        case httpStatus(Int, ResponseMeaning)
        /// The transfer ended without an answer (or this machine could not store it).
        case transfer(HTTPFailure.Reason)
        case notAnImage(contentType: String?)
    }

    package let reason: Reason
    /// curl's own words, when it had some.
    package let detail: String
    /// Seconds the server asked us to wait (Retry-After), if it did.
    package var retryAfter: Double?

    package var isTransient: Bool {
        switch reason {
        case .httpStatus(_, let meaning): meaning == .transient
        // A local failure is not retried within the run (a full disk stays full for seconds), nor
        // does it blacklist the URL: the next run tries again.
        case .transfer(let reason): HTTPFailure(reason).isTransient
        case .notAnImage: false
        }
    }

    /// The origin fails for now rather than the URL for good: a transient failure, or a page that
    /// is no image (a maintenance page served as 200) where an image was before. A cached original
    /// then serves stale (`http.staleIfError`).
    package var isOriginFailing: Bool {
        if case .notAnImage = reason { return true }
        return isTransient
    }

    /// Why the URL goes on the blacklist: a permanent failure, the server's doing; nil for a
    /// transient or local one.
    package var blacklistReason: BlacklistReason? {
        guard !isTransient else { return nil }
        return switch reason {
        case .httpStatus(_, .refused): nil
        case .httpStatus(let status, _): .download(.httpStatus(status))
        case .transfer(.tooManyRedirects): .download(.tooManyRedirects)
        case .transfer(.forbiddenScheme): .download(.forbiddenScheme)
        case .transfer(.malformedURL): .download(.malformedURL)
        case .transfer(.tooLarge): .download(.tooLarge)
        case .notAnImage: .download(.notAnImage)
        case .transfer: nil
        }
    }

    package var description: String {
        let summary: String = switch reason {
        case .httpStatus(let status, _): "HTTP \(status)"
        case .transfer(.tooLarge(let limit)): "larger than limits.maxDownloadBytes (\(limit) bytes)"
        case .transfer(let reason): HTTPFailure(reason).description
        case .notAnImage(let type): "not an image (Content-Type \(type ?? "none"))"
        }
        return detail.isEmpty ? summary : "\(summary): \(detail)"
    }
}
