import Foundation

/// An S3-compatible server and how its buckets are addressed: what a request to one of its
/// objects is signed and sent as.
package struct S3Endpoint: Sendable, Equatable, Codable {
    /// `path`: `http://host/bucket/key` (MinIO, SeaweedFS, most local servers). `virtualHosted`:
    /// `https://bucket.host/key` (AWS's default; a bucket name with dots breaks a TLS wildcard).
    package enum Addressing: String, Sendable, Equatable, Codable, CaseIterable {
        case path
        case virtualHosted = "virtual"
    }

    package let scheme: String
    /// Host and port as the `Host` header carries them: lower case, no default port.
    package let authority: String
    package let region: String
    package let addressing: Addressing

    /// nil unless `url` is `http://` or `https://`, a host (and port), and at most a `/` after it.
    package init?(url: String, region: String, addressing: Addressing) {
        let lowered = url.lowercased()
        guard let separator = lowered.range(of: "://"),
              case let scheme = String(lowered[..<separator.lowerBound]), scheme == "http" || scheme == "https" else { return nil }
        var authority = String(lowered[separator.upperBound...])
        if authority.hasSuffix("/") { authority.removeLast() }
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else { return nil }
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        (self.scheme, self.authority, self.region, self.addressing) = (scheme, authority, region, addressing)
    }

    /// A request signed for S3: the URL and the headers (the caller's, then `x-amz-date`,
    /// `x-amz-content-sha256`, `x-amz-security-token` with a session token, and `Authorization`) to
    /// send exactly as they are; curl sets `Host` from the URL, as signed. `key` is the object's key
    /// as stored (any bytes: spaces, `+`, `=`, `%`, non-ASCII), empty for a request on the bucket.
    /// `payloadHash` is `SigV4.unsignedPayload` or `SigV4.payloadHash(of:)` of the body sent.
    package func signed(_ method: String, bucket: String, key: String = "", query: [String: String] = [:],
                        headers: [String: String] = [:], payloadHash: String = SigV4.unsignedPayload,
                        credentials: AWSCredentials, at date: Date = Date()) -> SignedRequest {
        let (host, path) = hostAndPath(bucket: bucket, key: key)
        let canonicalQuery = SigV4.canonicalQuery(query)
        var sent = headers
        sent["x-amz-date"] = SigV4.amzDate(date)
        sent["x-amz-content-sha256"] = payloadHash
        if let token = credentials.sessionToken { sent["x-amz-security-token"] = token.revealed }
        sent["Authorization"] = SigV4.authorization(
            method: method, path: path, query: canonicalQuery, headers: sent.merging(["host": host]) { $1 },
            payloadHash: payloadHash, credentials: credentials, region: region, service: "s3", amzDate: sent["x-amz-date"]!)
        return SignedRequest(method: method, url: "\(scheme)://\(host)\(path)" + (canonicalQuery.isEmpty ? "" : "?" + canonicalQuery),
                             headers: sent)
    }
}

extension S3Endpoint {
    /// AWS's own endpoint for `region`, virtual-hosted (as AWS addresses buckets) unless told otherwise;
    /// nil for a region that makes no host name.
    package static func aws(region: String, addressing: Addressing = .virtualHosted) -> S3Endpoint? {
        S3Endpoint(url: "https://s3.\(region).amazonaws.com" + (region.hasPrefix("cn-") ? ".cn" : ""), region: region, addressing: addressing)
    }

    /// The object's URL, as `signed` sends it without a query: what a download names.
    package func url(bucket: String, key: String) -> String {
        let (host, path) = hostAndPath(bucket: bucket, key: key)
        return "\(scheme)://\(host)\(path)"
    }

    /// The `Host` and the canonical path (the key percent-encoded, its slashes kept) of a request.
    private func hostAndPath(bucket: String, key: String) -> (host: String, path: String) {
        let bucketName = SigV4.encoded(bucket, keepingSlashes: false)
        let host = addressing == .virtualHosted ? "\(bucketName).\(authority)" : authority
        var path = addressing == .path ? "/" + bucketName : ""
        if !key.isEmpty || path.isEmpty { path += "/" + SigV4.encoded(key, keepingSlashes: true) }
        return (host, path)
    }
}

/// What curl sends for a signed request. Printed or dumped, it shows its method and URL only:
/// its headers carry the signature and any session token.
package struct SignedRequest: Sendable, CustomStringConvertible, CustomReflectable {
    package let method: String
    package let url: String
    package let headers: [String: String]

    package var description: String { "\(method) \(url)" }
    package var customMirror: Mirror { Mirror(self, children: ["method": method, "url": url]) }

    /// The request curl sends: its path exactly as signed, with `body`, its answer kept as `answer` says.
    package func http(_ body: HTTPRequest.Body = .none, answer: HTTPRequest.Answer = .memory(limit: HTTPResponse.documentLimit)) -> HTTPRequest {
        HTTPRequest(method, url, headers: headers, body: body, pathAsIs: true, answer: answer)
    }
}
