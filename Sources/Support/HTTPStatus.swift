/// What an HTTP status says of the server, for every kind of request runner sends.
public enum HTTPStatus {
    /// A request timeout, throttling (429, S3's 503 SlowDown) or a server error: fails for now, so it is retried.
    public static func isTransient(_ status: Int) -> Bool { status == 408 || status == 429 || status >= 500 }
}
