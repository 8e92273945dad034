import Foundation
import ObjectStore
import Testing
import TestSupport

/// The credentials chain over real files (the servers' part, web identity through STS, is in
/// ObjectStoreServerTests), and that no way of printing credentials shows a secret.
@Suite("Object store credentials")
struct CredentialsTests {
    static let secret = "wJalrXUtnFEMI/K7MDENG+SECRETpart"
    static let token = "FQoGZXIvYXdzSESSIONtokenPART=="

    @Test("the environment comes first, with its session token; one key without the other is an error")
    func environment() throws {
        let workspace = try Workspace()
        try workspace.write("[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = fromfile\n", to: ".aws/credentials")
        // Before web identity too: no STS is asked (its endpoint is a closed port).
        let found = try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_ACCESS_KEY_ID": "AKIAENV",
                                                            "AWS_SECRET_ACCESS_KEY": Self.secret, "AWS_SESSION_TOKEN": Self.token,
                                                            "AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "AWS_WEB_IDENTITY_TOKEN_FILE": "/dev/null",
                                                            "AWS_ENDPOINT_URL_STS": "http://127.0.0.1:\(ObjectStoreServer.freePorts(1)[0])"])
        #expect(found.source == .environment && found.accessKeyID == "AKIAENV")
        #expect(found.secretAccessKey.revealed == Self.secret && found.sessionToken?.revealed == Self.token)
        #expect(found.source.description == "environment")
        #expect(throws: CredentialsError.incompleteEnvironment(set: "AWS_ACCESS_KEY_ID", missing: "AWS_SECRET_ACCESS_KEY")) {
            try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_ACCESS_KEY_ID": "AKIAENV"])
        }
        #expect(throws: CredentialsError.incompleteEnvironment(set: "AWS_WEB_IDENTITY_TOKEN_FILE", missing: "AWS_ROLE_ARN")) {
            try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_WEB_IDENTITY_TOKEN_FILE": workspace.path("token")])
        }
        // A role without a token file is not web identity: the file answers.
        let fromFile = try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_ROLE_ARN": "arn:aws:iam::1:role/r"])
        #expect(fromFile.source == .sharedFile(path: workspace.path(".aws/credentials"), profile: "default"))
    }

    @Test("the shared credentials file: its profiles as the SDKs read them, AWS_PROFILE and AWS_SHARED_CREDENTIALS_FILE")
    func sharedFile() throws {
        let workspace = try Workspace()
        try workspace.write("""
            # written by aws configure\r
            [default]\r
            aws_access_key_id=AKIADEFAULT\r
            aws_secret_access_key=defaultsecret\r

            ; another account
            [photos]
            region = eu-west-1
            s3 =
              max_concurrent_requests = 20
            AWS_ACCESS_KEY_ID = AKIAPHOTOS
            aws_secret_access_key: \(Self.secret)
            aws_session_token = \(Self.token)
            """, to: "elsewhere/credentials")
        let file = workspace.path("elsewhere/credentials")
        let base = ["HOME": workspace.root, "AWS_SHARED_CREDENTIALS_FILE": file]
        let byDefault = try AWSCredentials.resolve(environment: base)
        #expect(byDefault.accessKeyID == "AKIADEFAULT" && byDefault.secretAccessKey.revealed == "defaultsecret")
        #expect(byDefault.sessionToken == nil && byDefault.source.description == "shared credentials file \(file), profile default")
        let photos = try AWSCredentials.resolve(environment: base.merging(["AWS_PROFILE": "photos"]) { $1 })
        #expect(photos.accessKeyID == "AKIAPHOTOS" && photos.secretAccessKey.revealed == Self.secret)
        #expect(photos.sessionToken?.revealed == Self.token)
        #expect(throws: CredentialsError.profileNotFound(path: file, profile: "other")) {
            try AWSCredentials.resolve(environment: base.merging(["AWS_PROFILE": "other"]) { $1 })
        }
        try workspace.write("[default]\nregion = us-east-1\n", to: "home/.aws/credentials")
        #expect(throws: CredentialsError.missing(sharedFile: workspace.path("home/.aws/credentials"), profile: "default")) {
            try AWSCredentials.resolve(environment: ["HOME": workspace.path("home")])
        }
        #expect(throws: CredentialsError.missing(sharedFile: workspace.path("nobody/.aws/credentials"), profile: "default")) {
            try AWSCredentials.resolve(environment: ["HOME": workspace.path("nobody")])
        }
    }

    @Test("a broken file is an error at its line, which is never quoted")
    func brokenFiles() throws {
        let workspace = try Workspace()
        let file = workspace.path("credentials")
        func resolving(_ text: String, profile: String? = nil) throws -> AWSCredentials {
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            var environment = ["HOME": workspace.root, "AWS_SHARED_CREDENTIALS_FILE": file]
            environment["AWS_PROFILE"] = profile
            return try AWSCredentials.resolve(environment: environment)
        }
        #expect(throws: CredentialsError.malformed(path: file, line: 3, reason: "neither a [profile] line nor key = value")) {
            try resolving("[default]\naws_access_key_id = AKIA\n\(Self.secret)\n")
        }
        #expect(throws: CredentialsError.malformed(path: file, line: 1, reason: "a setting before any [profile] line")) {
            try resolving("aws_secret_access_key = \(Self.secret)\n[default]\n")
        }
        #expect(throws: CredentialsError.malformed(path: file, line: 2, reason: "a [profile] line without its ]")) {
            try resolving("\n[default\n")
        }
        #expect(throws: CredentialsError.incompleteProfile(path: file, line: 4, profile: "photos", missing: "aws_secret_access_key")) {
            try resolving("[default]\naws_access_key_id = A\naws_secret_access_key = B\n[photos]\naws_access_key_id = AKIA\n", profile: "photos")
        }
        do {
            _ = try resolving("[default]\naws_access_key_id = AKIA\n\(Self.secret)\n")
        } catch {
            #expect(!"\(error)".contains(Self.secret) && "\(error)" == "\(file):3: neither a [profile] line nor key = value")
        }
        try FileManager.default.createDirectory(atPath: workspace.path("folder"), withIntermediateDirectories: true)
        #expect(throws: CredentialsError.unreadable(path: workspace.path("folder"), reason: "Is a directory")) {
            try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_SHARED_CREDENTIALS_FILE": workspace.path("folder")])
        }
    }

    @Test("a credentials file or web identity token file of 1 MiB is read; one byte more is refused naming its size and the limit")
    func credentialFilesAtTheLimit() throws {
        let workspace = try Workspace()
        let profile = "[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = fromfile\n"
        let atLimit = profile + "#" + String(repeating: "-", count: (1 << 20) - profile.utf8.count - 2) + "\n"
        try workspace.write(atLimit, to: "at/credentials")
        try workspace.write(atLimit + " ", to: "over/credentials")
        let read = try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_SHARED_CREDENTIALS_FILE": workspace.path("at/credentials")])
        #expect(read.accessKeyID == "AKIAFILE")
        #expect(throws: CredentialsError.unreadable(path: workspace.path("over/credentials"), reason: "it is 1048577 bytes, over the limit of 1 MiB")) {
            try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_SHARED_CREDENTIALS_FILE": workspace.path("over/credentials")])
        }
        // A token at the limit is sent to STS (a closed port here); one byte more is refused before any request.
        let sts = "http://127.0.0.1:\(ObjectStoreServer.freePorts(1)[0])"
        try workspace.write(String(repeating: "t", count: 1 << 20), to: "at/token")
        try workspace.write(String(repeating: "t", count: (1 << 20) + 1), to: "over/token")
        func assume(_ token: String) throws(CredentialsError) -> AWSCredentials {
            try AWSCredentials.resolve(environment: ["HOME": workspace.root, "AWS_ROLE_ARN": "arn:aws:iam::1:role/r",
                                                     "AWS_WEB_IDENTITY_TOKEN_FILE": workspace.path(token), "AWS_ENDPOINT_URL_STS": sts])
        }
        do { _ = try assume("at/token") } catch {
            #expect(error.description.hasPrefix("STS at \(sts) could not be reached"), "\(error)")
        }
        #expect(throws: CredentialsError.unreadable(path: workspace.path("over/token"), reason: "it is 1048577 bytes, over the limit of 1 MiB")) {
            try assume("over/token")
        }
    }

    @Test("printed, dumped, reflected or interpolated, credentials and requests signed with them show no secret")
    func nothingLeaks() throws {
        let credentials = AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: Self.secret, sessionToken: Self.token,
                                         source: .environment)
        let endpoint = try #require(S3Endpoint(url: "http://127.0.0.1:9000", region: "us-east-1", addressing: .path))
        let signed = endpoint.signed("GET", bucket: "photos", key: "a.jpg", credentials: credentials)
        var dumped = ""
        dump(credentials, to: &dumped)
        dump(signed, to: &dumped)
        dump(credentials.secretAccessKey, to: &dumped)
        let printed = ["\(credentials)", String(describing: credentials), String(reflecting: credentials), "\(signed)",
                       String(reflecting: signed), "\(credentials.secretAccessKey)", "\(String(describing: credentials.sessionToken))",
                       "\([credentials])", "\(Mirror(reflecting: credentials).children.map { "\($0)" })", dumped]
        for text in printed {
            #expect(!text.contains(Self.secret) && !text.contains(Self.token) && !text.contains("Signature="), "\(text)")
        }
        #expect("\(credentials)" == "credentials from environment, access key ****MPLE with a session token")
        #expect(signed.headers["x-amz-security-token"] == Self.token)  // sent, but never shown
    }
}
