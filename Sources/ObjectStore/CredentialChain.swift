import Foundation
import Support
#if canImport(Glibc)
import Glibc
#endif

extension AWSCredentials {
    /// The AWS SDKs' chain (environment, then web identity, then the shared credentials file), the
    /// first source that has credentials wins; a source that is set up wrong is an error, not
    /// skipped, so a run never silently falls back to another identity. Container and instance
    /// metadata, the SDKs' last sources, are not asked.
    package static func resolve(environment: [String: String] = ProcessInfo.processInfo.environment,
                                now: Date = Date()) throws(CredentialsError) -> AWSCredentials {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        switch (value("AWS_ACCESS_KEY_ID"), value("AWS_SECRET_ACCESS_KEY")) {
        case let (id?, secret?):
            return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"), source: .environment)
        case (_?, nil): throw .incompleteEnvironment(set: "AWS_ACCESS_KEY_ID", missing: "AWS_SECRET_ACCESS_KEY")
        case (nil, _?): throw .incompleteEnvironment(set: "AWS_SECRET_ACCESS_KEY", missing: "AWS_ACCESS_KEY_ID")
        case (nil, nil): break
        }
        // As the SDKs: a token file without a role is an error, a role without a token file is not web identity.
        if let tokenFile = value("AWS_WEB_IDENTITY_TOKEN_FILE") {
            guard let role = value("AWS_ROLE_ARN") else {
                throw .incompleteEnvironment(set: "AWS_WEB_IDENTITY_TOKEN_FILE", missing: "AWS_ROLE_ARN")
            }
            let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION")
            let sts = value("AWS_ENDPOINT_URL_STS") ?? value("AWS_ENDPOINT_URL")
                ?? region.map { "https://sts.\($0).amazonaws.com" + ($0.hasPrefix("cn-") ? ".cn" : "") } ?? "https://sts.amazonaws.com"
            return try assumeRole(role, tokenFile: tokenFile, sessionName: value("AWS_ROLE_SESSION_NAME")
                                  ?? "runner-\(Int(now.timeIntervalSince1970))", sts: sts)
        }
        let home = value("HOME") ?? NSHomeDirectory()
        let file = value("AWS_SHARED_CREDENTIALS_FILE").map { $0.hasPrefix("~/") ? home + $0.dropFirst() : $0 }
            ?? home + "/.aws/credentials"
        let profile = value("AWS_PROFILE")
        if let found = try fromSharedFile(file, profile: profile ?? "default", named: profile != nil) { return found }
        throw .missing(sharedFile: file, profile: profile ?? "default")
    }

    /// The profile's keys in a shared credentials file, read as the SDKs read it: `[name]` sections,
    /// `key = value` (or `key: value`) lines, `#` and `;` comment lines, and indented lines under a
    /// `key =` with no value (a nested setting). nil when there is no file (unless `named`: the
    /// user asked for that profile) or the profile has neither key.
    static func fromSharedFile(_ path: String, profile: String, named: Bool) throws(CredentialsError) -> AWSCredentials? {
        guard let text = try readText(path) else {
            if named { throw .profileNotFound(path: path, profile: profile) }
            return nil
        }
        var section: String?, sectionLine = 0, keys: [String: String]?, nested = false
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if nested && (raw.first == " " || raw.first == "\t") { continue }
            nested = false
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw .malformed(path: path, line: index + 1, reason: "a [profile] line without its ]") }
                section = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if section == profile && keys == nil { (keys, sectionLine) = ([:], index + 1) }
                continue
            }
            guard let separator = line.firstIndex(where: { $0 == "=" || $0 == ":" }) else {
                throw .malformed(path: path, line: index + 1, reason: "neither a [profile] line nor key = value")
            }
            guard section != nil else { throw .malformed(path: path, line: index + 1, reason: "a setting before any [profile] line") }
            let value = line[line.index(after: separator)...].trimmingCharacters(in: .whitespaces)
            nested = value.isEmpty
            if section == profile { keys?[line[..<separator].trimmingCharacters(in: .whitespaces).lowercased()] = value }
        }
        if keys == nil && named { throw .profileNotFound(path: path, profile: profile) }
        switch (keys?["aws_access_key_id"].flatMap { $0.isEmpty ? nil : $0 }, keys?["aws_secret_access_key"].flatMap { $0.isEmpty ? nil : $0 }) {
        case let (id?, secret?):
            return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: keys?["aws_session_token"],
                                  source: .sharedFile(path: path, profile: profile))
        case (_?, nil): throw .incompleteProfile(path: path, line: sectionLine, profile: profile, missing: "aws_secret_access_key")
        case (nil, _?): throw .incompleteProfile(path: path, line: sectionLine, profile: profile, missing: "aws_access_key_id")
        case (nil, nil): return nil
        }
    }

    /// STS `AssumeRoleWithWebIdentity` (unsigned: the token is the proof) with the token file's
    /// token, read now, since Kubernetes rotates it in place.
    static func assumeRole(_ roleARN: String, tokenFile: String, sessionName: String, sts: String) throws(CredentialsError) -> AWSCredentials {
        guard let token = try readText(tokenFile) else { throw .unreadable(path: tokenFile, reason: String(cString: strerror(ENOENT))) }
        let form = SigV4.canonicalQuery(["Action": "AssumeRoleWithWebIdentity", "Version": "2011-06-15", "RoleArn": roleARN,
                                         "RoleSessionName": sessionName,
                                         "WebIdentityToken": token.trimmingCharacters(in: .whitespacesAndNewlines)])
        let response: HTTPResponse
        do {
            response = try HTTPConnection().perform(HTTPRequest("POST", sts, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                                                body: .bytes(Array(form.utf8))))
        } catch {
            throw .stsUnreachable(endpoint: sts, detail: error.description)
        }
        let fields = XMLFields.first(of: ["AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration", "Code", "Message"],
                                     in: response.body)
        guard response.status == 200, let id = fields["AccessKeyId"], let secret = fields["SecretAccessKey"] else {
            throw .stsRefused(endpoint: sts, status: response.status, code: fields["Code"], message: fields["Message"])
        }
        return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: fields["SessionToken"],
                              source: .webIdentity(roleARN: roleARN), expiration: fields["Expiration"].flatMap(ListedObject.date))
    }

    /// The largest credentials file or web identity token file read, 1 MiB: a profile takes a few
    /// lines, and STS takes a token of at most 20,000 characters.
    package static let largestCredentialsFile = 1 << 20

    /// A small file's text; nil when there is no such file.
    private static func readText(_ path: String) throws(CredentialsError) -> String? {
        do {
            return String(decoding: try FileDescriptor.readWhole(path, limit: largestCredentialsFile), as: UTF8.self)
        } catch .failed(ENOENT) {
            return nil
        } catch {
            throw .unreadable(path: path, reason: error.description)
        }
    }
}
