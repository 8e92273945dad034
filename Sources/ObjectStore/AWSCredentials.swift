import Foundation

/// A secret key, session token or web identity token. Interpolated, printed, dumped or reflected
/// it is `<redacted>`, so no log line, message or report can carry it by accident; only the signer
/// and the STS request read `revealed`. Not `Codable`: it cannot be written to a file either.
package struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let revealed: String

    package init(_ value: String) { revealed = value }

    package var description: String { "<redacted>" }
    package var debugDescription: String { "<redacted>" }
    package var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// Where a run's credentials came from: what it says (`credentials: environment`), so that a
/// pod that silently fell back to a broader role shows it.
package enum CredentialSource: Sendable, Equatable, CustomStringConvertible {
    case environment
    case webIdentity(roleARN: String)
    case sharedFile(path: String, profile: String)

    package var description: String {
        switch self {
        case .environment: "environment"
        case .webIdentity(let roleARN): "web identity (role \(roleARN))"
        case .sharedFile(let path, let profile): "shared credentials file \(path), profile \(profile)"
        }
    }
}

/// An access key and its secret, with a session token for temporary ones. Printed, it names its
/// source and the access key's last four characters (as `aws configure list` does), never a secret.
package struct AWSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let accessKeyID: String
    package let secretAccessKey: Secret
    package let sessionToken: Secret?
    package let source: CredentialSource
    /// When temporary credentials (web identity) stop working: resolve again before then.
    package let expiration: Date?

    package init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, source: CredentialSource,
                 expiration: Date? = nil) {
        (self.accessKeyID, self.source, self.expiration) = (accessKeyID, source, expiration)
        self.secretAccessKey = Secret(secretAccessKey)
        self.sessionToken = sessionToken.flatMap { $0.isEmpty ? nil : Secret($0) }
    }

    package var description: String {
        "credentials from \(source), access key ****\(accessKeyID.suffix(4))" + (sessionToken == nil ? "" : " with a session token")
    }

    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["source": source]) }
}

/// Why no credentials could be had, said with where to look. No case carries a secret, nor the
/// text of a credentials file's line (it may hold one): a line is named by its number.
package enum CredentialsError: Error, Equatable, CustomStringConvertible {
    /// Nothing in the chain: neither variable set, and the profile not in the file (or no file).
    case missing(sharedFile: String, profile: String)
    /// One of a pair of variables set without the other (`AWS_ACCESS_KEY_ID` without
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_WEB_IDENTITY_TOKEN_FILE` without `AWS_ROLE_ARN`).
    case incompleteEnvironment(set: String, missing: String)
    case unreadable(path: String, reason: String)
    case malformed(path: String, line: Int, reason: String)
    /// `AWS_PROFILE` names a profile the shared credentials file does not have.
    case profileNotFound(path: String, profile: String)
    /// The profile's section (at `line`) has one of the access key and the secret without the other.
    case incompleteProfile(path: String, line: Int, profile: String, missing: String)
    /// STS answered, but not with credentials: its HTTP status and error code (`AccessDenied`,
    /// `InvalidIdentityToken`, `ExpiredTokenException`, ...) and message.
    case stsRefused(endpoint: String, status: Int, code: String?, message: String?)
    /// STS could not be reached (the curl error).
    case stsUnreachable(endpoint: String, detail: String)

    package var description: String {
        switch self {
        case .missing(let file, let profile):
            "no credentials: AWS_ACCESS_KEY_ID and AWS_WEB_IDENTITY_TOKEN_FILE are not set, and \(file) has no profile \(profile)"
        case .incompleteEnvironment(let set, let missing): "\(set) is set but \(missing) is not"
        case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
        case .malformed(let path, let line, let reason): "\(path):\(line): \(reason)"
        case .profileNotFound(let path, let profile): "AWS_PROFILE names profile \(profile), which \(path) does not have"
        case .incompleteProfile(let path, let line, let profile, let missing):
            "\(path):\(line): profile \(profile) has no \(missing)"
        case .stsRefused(let endpoint, let status, let code, let message):
            "STS at \(endpoint) refused AssumeRoleWithWebIdentity: HTTP \(status)"
                + (code.map { " \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
        case .stsUnreachable(let endpoint, let detail): "STS at \(endpoint) could not be reached: \(detail)"
        }
    }
}
