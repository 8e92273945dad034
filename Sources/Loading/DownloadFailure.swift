internal import CCurl
import Model
import Planning

/// Why a download failed, classified once so the blacklist never matches strings.
/// Permanent failures blacklist the URL; transient ones are retried (SDWebImage's rule, made precise).
package struct DownloadFailure: Error, Sendable, CustomStringConvertible {
    package enum Reason: Sendable, Equatable {
        /// A response's status, and what its source's kind says it means.
        case httpStatus(Int, ResponseMeaning)
        case timedOut, stalled, hostNotFound, connectionFailed, connectionReset, truncated
        case tooManyRedirects, forbiddenScheme, malformedURL
        case tooLarge(limit: Int)
        case notAnImage(contentType: String?)
        /// This machine failed, not the server: the body could not be stored (disk full, a folder
        /// that cannot be written), or a transfer could not be set up.
        case local
        case other(code: Int)
    }

    package let reason: Reason
    /// curl's own words, when it had some.
    package let detail: String
    /// Seconds the server asked us to wait (Retry-After), if it did.
    package var retryAfter: Double?

    package var isTransient: Bool {
        switch reason {
        case .httpStatus(_, let meaning): meaning == .transient
        case .timedOut, .stalled, .hostNotFound, .connectionFailed, .connectionReset, .truncated, .other: true
        // A local failure is not retried within the run (a full disk stays full for seconds), nor
        // does it blacklist the URL: the next run tries again.
        case .tooManyRedirects, .forbiddenScheme, .malformedURL, .tooLarge, .notAnImage, .local: false
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
        case .tooManyRedirects: .download(.tooManyRedirects)
        case .forbiddenScheme: .download(.forbiddenScheme)
        case .malformedURL: .download(.malformedURL)
        case .tooLarge: .download(.tooLarge)
        case .notAnImage: .download(.notAnImage)
        case .timedOut, .stalled, .hostNotFound, .connectionFailed, .connectionReset, .truncated, .local, .other: nil
        }
    }

    package var description: String {
        let summary: String = switch reason {
        case .httpStatus(let status, _): "HTTP \(status)"
        case .timedOut: "timed out"
        case .stalled: "transfer stalled"
        case .hostNotFound: "host not found"
        case .connectionFailed: "connection failed"
        case .connectionReset: "connection reset"
        case .truncated: "body shorter than announced"
        case .tooManyRedirects: "too many redirects"
        case .forbiddenScheme: "redirected or pointed to a scheme other than http/https"
        case .malformedURL: "malformed URL"
        case .tooLarge(let limit): "larger than limits.maxDownloadBytes (\(limit) bytes)"
        case .notAnImage(let type): "not an image (Content-Type \(type ?? "none"))"
        case .local: "could not be stored here"
        case .other(let code): "curl error \(code)"
        }
        return detail.isEmpty ? summary : "\(summary): \(detail)"
    }

    /// Classifies a finished curl transfer that did not succeed at the transport level.
    static func transport(_ code: CURLcode, detail: String, elapsed: Double, timeout: Double, limit: Int) -> DownloadFailure {
        let reason: Reason = switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .hostNotFound
        case CURLE_COULDNT_CONNECT: .connectionFailed
        // The low-speed limit and the whole-transfer limit share one code; the clock tells them apart.
        case CURLE_OPERATION_TIMEDOUT: elapsed + 0.5 < timeout ? .stalled : .timedOut
        case CURLE_PARTIAL_FILE: .truncated
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING: .connectionReset
        case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
        case CURLE_UNSUPPORTED_PROTOCOL: .forbiddenScheme
        case CURLE_URL_MALFORMAT: .malformedURL
        case CURLE_FILESIZE_EXCEEDED: .tooLarge(limit: limit)
        default: .other(code: Int(code.rawValue))
        }
        return DownloadFailure(reason: reason, detail: detail, retryAfter: nil)
    }
}
