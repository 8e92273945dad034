import Foundation

/// Everything about HTTP(S) sources, decoded once with its defaults.
public struct RemoteSettings: Sendable {
    /// Whole-transfer limit (SDWebImage's and Kingfisher's 15 s).
    public var timeout = 15.0
    public var connectTimeout = 5.0
    public var maxRedirects = 5
    /// A transfer slower than `lowSpeedLimit` bytes/s for `lowSpeedTime` seconds is a stall.
    public var lowSpeedLimit = 1024
    public var lowSpeedTime = 10.0
    /// Sent with every request; values never reach logs or the database.
    public var headers: [String: String] = [:]
    public var revalidate = Revalidation.always
    public var retry = RetryPolicy()
    /// How long a blacklisted URL stays blocked; nil: until unblocked or `--retry-failed`.
    public var blacklistTTL: Double?
    public var maxDownloadBytes = 50_000_000
    public var downloads = 16
    public var perHost = 6
    /// Folder for downloaded originals.
    public var cacheDirectory = ""
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

/// Exponential backoff with full jitter, honouring Retry-After (capped at `maxDelay`).
public struct RetryPolicy: Sendable {
    public var attempts = 3
    public var initialDelay = 1.0
    public var maxDelay = 60.0

    /// The wait before attempt `attempt` + 1 (attempt counts from 1).
    func delay(after attempt: Int, retryAfter: Double?) -> Double {
        if let retryAfter { return min(max(retryAfter, 0), maxDelay) }
        let ceiling = min(maxDelay, initialDelay * pow(2, Double(attempt - 1)))
        return Double.random(in: ceiling / 2...ceiling)
    }
}

extension Job {
    static func readRemote(_ root: ObjectReader, statePath: String, concurrency: ObjectReader?,
                           limits: ObjectReader?) throws -> RemoteSettings {
        var settings = RemoteSettings()
        if let http = try root.object("http", keys: [
            "timeout", "connectTimeout", "maxRedirects", "lowSpeedLimit", "lowSpeedTime", "headers", "headersFromEnv", "revalidate",
        ]) {
            settings.timeout = try http.double("timeout", default: settings.timeout, .positive)
            settings.connectTimeout = try http.double("connectTimeout", default: settings.connectTimeout, .positive)
            settings.maxRedirects = try http.int("maxRedirects", default: settings.maxRedirects, .range(0, 50))
            settings.lowSpeedLimit = try http.int("lowSpeedLimit", default: settings.lowSpeedLimit, .nonNegative)
            settings.lowSpeedTime = try http.double("lowSpeedTime", default: settings.lowSpeedTime, .positive)
            settings.headers = try readHeaders(http, "headers")
            for (name, variable) in try readHeaders(http, "headersFromEnv") {
                guard let value = ProcessInfo.processInfo.environment[variable] else {
                    throw JobFileError(http.location("headersFromEnv") + ".\(name)", "environment variable \(variable) is not set")
                }
                settings.headers[name] = value
            }
            if let text = try http.string("revalidate") {
                switch text {
                case "always": settings.revalidate = .always
                case "never": settings.revalidate = .never
                default:
                    guard let seconds = Durations.seconds(text) else {
                        throw http.error("revalidate", "must be \"always\", \"never\" or a duration such as \"12h\"")
                    }
                    settings.revalidate = .after(seconds)
                }
            }
            try http.finish()
        }
        if let retry = try root.object("retry", keys: ["attempts", "initialDelay", "maxDelay"]) {
            settings.retry.attempts = try retry.int("attempts", default: settings.retry.attempts, .range(1, 100))
            settings.retry.initialDelay = try retry.double("initialDelay", default: settings.retry.initialDelay, .nonNegative)
            settings.retry.maxDelay = try retry.double("maxDelay", default: settings.retry.maxDelay, .nonNegative)
            try retry.finish()
        }
        if let blacklist = try root.object("blacklist", keys: ["ttl"]) {
            if let text = try blacklist.string("ttl") {
                guard let seconds = Durations.seconds(text) else {
                    throw blacklist.error("ttl", "must be a duration such as \"7d\", \"12h\", \"30m\" or \"90s\"")
                }
                settings.blacklistTTL = seconds
            }
            try blacklist.finish()
        }
        settings.maxDownloadBytes = try limits?.int("maxDownloadBytes", default: settings.maxDownloadBytes, .positive)
            ?? settings.maxDownloadBytes
        settings.downloads = try concurrency?.int("download", default: settings.downloads, .range(1, 1024)) ?? settings.downloads
        settings.perHost = try concurrency?.int("perHost", default: settings.perHost, .range(1, 1024)) ?? settings.perHost
        let defaultCache = Paths.splitExtension(statePath).stem + ".cache"
        settings.cacheDirectory = Paths.resolve(try root.string("cache") ?? defaultCache,
                                                against: Paths.directory(of: statePath))
        settings.cacheMaxBytes = try root.optionalInt("cacheMaxBytes", .positive)
        return settings
    }

    static func readHeaders(_ reader: ObjectReader, _ key: String) throws -> [String: String] {
        guard let object = try reader.object(key) else { return [:] }
        var headers: [String: String] = [:]
        for name in object.keys {
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }), !name.isEmpty else {
                throw object.error(name, "is not a valid header name")
            }
            headers[name] = try object.string(name)
        }
        return headers
    }
}
