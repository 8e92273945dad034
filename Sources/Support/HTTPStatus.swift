import Foundation
import Synchronization

/// What an HTTP status says of the server, for every kind of request runner sends.
public enum HTTPStatus {
    /// A request timeout, throttling (429, S3's 503 SlowDown) or a server error: fails for now, so it is retried.
    public static func isTransient(_ status: Int) -> Bool { status == 408 || status == 429 || status >= 500 }
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`): a `Retry-After`, a response's `Date`.
package enum HTTPDate {
    private static let formatter = Mutex<DateFormatter>({
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter
    }())

    package static func parse(_ text: String) -> Date? { formatter.withLock { $0.date(from: text) } }
}
