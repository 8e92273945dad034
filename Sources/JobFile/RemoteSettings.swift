import Foundation
import Support
import Keys
import ObjectStore

/// Everything about HTTP(S) sources, decoded once with its defaults (`RemoteSettings.Keys`).
public struct RemoteSettings: Sendable {
    /// Whole-transfer limit.
    public var timeout: Double
    public var connectTimeout: Double
    public var maxRedirects: Int
    /// A transfer slower than `lowSpeedLimit` bytes/s for `lowSpeedTime` seconds is a stall.
    public var lowSpeedLimit: Int
    public var lowSpeedTime: Double
    /// Sent with every request; values never reach logs or the database.
    public var headers: [String: String]
    public var revalidate: Revalidation
    /// How long a cached original whose revalidation fails transiently (the origin unreachable,
    /// timing out, answering 5xx) still counts as current: its up-to-date outputs stay up to date
    /// (RFC 5861's stale-if-error), counted "not revalidated" instead of failed.
    public var staleIfError: Double
    public var retry: RetryPolicy
    /// How long a blacklisted URL stays blocked; nil: until unblocked or `--retry-failed`.
    public var blacklistTTL: Double?
    public var maxDownloadBytes: Int
    public var downloads: Int
    public var perHost: Int
    /// Folder for downloaded originals.
    public var cacheDirectory: String
    /// Least recently used originals are removed above this size; nil: no cap.
    public var cacheMaxBytes: Int?

    public enum Revalidation: Sendable, Equatable {
        /// Ask the server (conditionally) on every run.
        case always
        /// Trust a cached original for ever.
        case never
        /// Trust a cached original validated less than this many seconds ago.
        case after(Double)
    }
}

extension RemoteSettings {
    /// The job file's keys for HTTP(S) sources (`Job.Keys` places them).
    package enum Keys {
        /// SDWebImage's and Kingfisher's 15 s.
        package static let timeout = Key.number("timeout", .positive, .defaults(15), "Seconds for a whole transfer.")
        package static let connectTimeout = Key.number("connectTimeout", .positive, .defaults(5), "Seconds to connect.")
        package static let maxRedirects = Key.integer("maxRedirects", .range(0, 50), .defaults(5),
                                              "Redirects followed; only to http and https.")
        package static let lowSpeedLimit = Key.integer("lowSpeedLimit", .nonNegative, .defaults(1024),
                                               "Bytes per second under which a transfer is stalling (transient failure).")
        package static let lowSpeedTime = Key.number("lowSpeedTime", .positive, .defaults(10),
                                             "Seconds under lowSpeedLimit that make a stall.")
        package static let headers = Key.headers("headers", "Headers sent with every request.")
        package static let headersFromEnv = Key.headers("headersFromEnv",
            "Header name -> environment variable holding its value, so secrets stay out of job files; an unset variable is an error. Header values are never logged or stored.")
        package static let revalidate = Key<Revalidation>("revalidate", .defaults(.always),
            "When to ask the server about a cached original: always (a conditional request every run), never, or a duration such as \"12h\" within which a cached original is used without any request.",
            schema: ["anyOf": [["enum": ["always", "never"]], ["type": "string", "pattern": .string(Durations.pattern)]]],
            written: { revalidation in
                switch revalidation {
                case .always: "always"
                case .never: "never"
                case .after(let seconds): .string("\(canonicalNumber(seconds))s")
                }
            }) { value, location in
            switch value {
            case .string("always"): return .always
            case .string("never"): return .never
            case .string(let text) where Durations.seconds(text) != nil: return .after(Durations.seconds(text)!)
            default: throw JobFileError(location, "must be \"always\", \"never\" or a duration such as \"12h\"")
            }
        }
        package static let staleIfError = Key.duration("staleIfError", .defaults(7 * 86_400),
            "How long after its last successful revalidation a cached original still serves when revalidating it fails transiently (origin unreachable, timeout, 5xx, 408, 429): its up-to-date outputs stay up to date, counted not revalidated; after that its items fail as download failures. \"0s\" turns it off.")
        package static let http = ObjectKey("http", .fixed(ObjectShape([
            timeout, connectTimeout, maxRedirects, lowSpeedLimit, lowSpeedTime, headers, headersFromEnv, revalidate, staleIfError,
        ])), "HTTP(S) transfers.")

        package static let attempts = Key.integer("attempts", .range(1, 100), .defaults(3), "Tries per URL in a run for transient failures.")
        package static let initialDelay = Key.number("initialDelay", .nonNegative, .defaults(1),
                                             "Seconds before the first retry; doubles each time, with jitter.")
        package static let maxDelay = Key.number("maxDelay", .nonNegative, .defaults(60),
                                         "Longest wait between tries in seconds; also caps Retry-After.")
        package static let retry = ObjectKey("retry", .fixed(ObjectShape([attempts, initialDelay, maxDelay])),
                                     "Retries of transient download failures.")

        package static let ttl = Key.duration("ttl", .optional("never"),
                                      "How long a blacklisted URL stays blocked, e.g. \"7d\" (s, m, h, d, w).")
        package static let blacklist = ObjectKey("blacklist", .fixed(ObjectShape([ttl])), "URLs that failed for good.")

        package static let download = Key.integer("download", .range(1, 1024), .defaults(16),
                                          "HTTP(S) transfers at once (a pool separate from the image workers).")
        package static let perHost = Key.integer("perHost", .range(1, 1024), .defaults(6), "Transfers (and connections) at once to one host.")
        package static let maxDownloadBytes = Key.integer("maxDownloadBytes", .positive, .defaults(50_000_000),
            "A download stops as soon as Content-Length or the bytes received exceed this (permanent failure).")
        package static let cache = Key.text("cache", .optional("<state file without .sqlite>.cache beside the state database"),
                                    "Folder for downloaded originals, named by a hash of the source key.")
        package static let cacheMaxBytes = Key.integer("cacheMaxBytes", .positive, .optional("no cap"),
                                               "Least recently used originals are removed after a run to stay under this size.")
    }
}

extension Job {
    package static func readRemote(_ root: ObjectReader, statePath: String, concurrency: ObjectReader,
                           limits: ObjectReader, retry: RetryPolicy) throws -> RemoteSettings {
        typealias Keys = RemoteSettings.Keys
        let http = try root.object(Keys.http)
        var headers = try http.read(Keys.headers)
        for (name, variable) in try http.read(Keys.headersFromEnv) {
            guard let value = ProcessInfo.processInfo.environment[variable] else {
                throw JobFileError(http.location(Keys.headersFromEnv) + ".\(name)", "environment variable \(variable) is not set")
            }
            headers[name] = value
        }
        let blacklist = try root.object(Keys.blacklist)
        let defaultCache = Paths.splitExtension(statePath).stem + ".cache"
        let settings = RemoteSettings(
            timeout: try http.read(Keys.timeout), connectTimeout: try http.read(Keys.connectTimeout),
            maxRedirects: try http.read(Keys.maxRedirects), lowSpeedLimit: try http.read(Keys.lowSpeedLimit),
            lowSpeedTime: try http.read(Keys.lowSpeedTime), headers: headers, revalidate: try http.read(Keys.revalidate),
            staleIfError: try http.read(Keys.staleIfError),
            retry: retry,
            blacklistTTL: try blacklist.optional(Keys.ttl), maxDownloadBytes: try limits.read(Keys.maxDownloadBytes),
            downloads: try concurrency.read(Keys.download), perHost: try concurrency.read(Keys.perHost),
            cacheDirectory: Paths.resolve(try root.optional(Keys.cache) ?? defaultCache, against: Paths.directory(of: statePath)),
            cacheMaxBytes: try root.optional(Keys.cacheMaxBytes))
        try http.finish()
        try blacklist.finish()
        return settings
    }
}
