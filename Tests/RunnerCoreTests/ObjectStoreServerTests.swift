import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import ObjectStore
import Testing
import TestSupport

/// Signed requests and the credentials chain against real S3 servers started by each test:
/// SeaweedFS for keys of any bytes and refused signatures, moto for web identity and session tokens.
@Suite("Object store servers")
struct ObjectStoreServerTests {
    static let accessKey = "runnertestkey"
    static let secret = "runner+test/SECRET=key"
    /// Keys a lister and a writer meet: SeaweedFS refuses `.` and `..` segments and merges `//`, so
    /// those are left to stores that keep them (runner sends paths as they are).
    static let keys = ["plain.jpg", "with space.jpg", "plus+sign.jpg", "equals=sign.jpg", "100%.jpg", "é/café.jpg",
                       "日本/写真 1.jpg", "a&b;c,d'e(f)!*$@:.jpg", "tilde~x.jpg", "q?x#y.jpg", "trailing "]

    @Test("PUT, GET and a paged ListObjectsV2 of awkward keys are accepted, and store the keys a second client reads")
    func awkwardKeys() throws {
        let server = try ObjectStoreServer.seaweedFS(accessKey: Self.accessKey, secretKey: Self.secret)
        let credentials = AWSCredentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secret, source: .environment)
        let store = try #require(S3Endpoint(url: server.endpoint, region: "us-east-1", addressing: .path))
        func send(_ request: SignedRequest, body: [UInt8]? = nil) throws -> HTTPResponse {
            try HTTPConnection().perform(request.http(body.map { .bytes($0) } ?? .none))
        }
        #expect(try send(store.signed("PUT", bucket: "photos", credentials: credentials)).status == 200)
        for (index, key) in Self.keys.enumerated() {
            let body = Array("body of \(key)".utf8)
            // Every other body signed, the rest sent as UNSIGNED-PAYLOAD.
            let hash = index % 2 == 0 ? SigV4.payloadHash(of: body) : SigV4.unsignedPayload
            let put = store.signed("PUT", bucket: "photos", key: key, headers: ["Content-Type": "image/jpeg", "Cache-Control": "max-age=60"],
                                   payloadHash: hash, credentials: credentials)
            let stored = try send(put, body: body)
            #expect(stored.status == 200, "PUT \(key): \(stored.status) \(stored.errorCode ?? "")")
            let fetched = try send(store.signed("GET", bucket: "photos", key: key, credentials: credentials))
            #expect(fetched.status == 200 && fetched.body == body, "GET \(key): \(fetched.status) \(fetched.errorCode ?? "")")
        }
        var listed: [String] = [], token: String?
        repeat {
            var query = ["list-type": "2", "max-keys": "3"]
            query["continuation-token"] = token
            let page = try send(store.signed("GET", bucket: "photos", query: query, credentials: credentials))
            try #require(page.status == 200, "ListObjectsV2: \(page.status) \(page.errorCode ?? "")")
            let (keys, next) = Self.listing(page.body)
            listed += keys
            token = next
        } while token != nil
        #expect(listed.sorted() == Self.keys.sorted())
        let prefixed = try send(store.signed("GET", bucket: "photos", query: ["list-type": "2", "prefix": "日本/写"], credentials: credentials))
        #expect(Self.listing(prefixed.body).keys == ["日本/写真 1.jpg"])

        // boto3 reads back what was written: the keys exactly, their bodies and headers.
        let second = try server.python("""
            import json
            s3 = boto("s3", sys.argv[1], sys.argv[2])
            for o in s3.list_objects_v2(Bucket="photos")["Contents"]:
                got = s3.get_object(Bucket="photos", Key=o["Key"])
                print(json.dumps([o["Key"], got["Body"].read().decode(), got["ContentType"], got.get("CacheControl")]))
            """, [Self.accessKey, Self.secret])
        let rows = second.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String?] }
        #expect(rows.count == Self.keys.count, "\(second.stderr)")
        for row in rows {
            #expect(row.count == 4 && row[1] == "body of \(row[0] ?? "")" && row[2] == "image/jpeg" && row[3] == "max-age=60", "\(row)")
        }
    }

    @Test("a wrong secret, or a request sent to another key than it was signed for, is SignatureDoesNotMatch")
    func refusedSignatures() throws {
        let server = try ObjectStoreServer.seaweedFS(accessKey: Self.accessKey, secretKey: Self.secret)
        let store = try #require(S3Endpoint(url: server.endpoint, region: "us-east-1", addressing: .path))
        let right = AWSCredentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secret, source: .environment)
        let wrong = AWSCredentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secret + "x", source: .environment)
        let create = store.signed("PUT", bucket: "photos", credentials: right)
        #expect(try HTTPConnection().perform(create.http()).status == 200)

        let refused = store.signed("GET", bucket: "photos", query: ["list-type": "2"], credentials: wrong)
        let answer = try HTTPConnection().perform(refused.http())
        #expect(answer.status == 403 && answer.errorCode == "SignatureDoesNotMatch")
        let signed = store.signed("PUT", bucket: "photos", key: "a b.jpg", credentials: right)
        let elsewhere = try HTTPConnection().perform(HTTPRequest("PUT", signed.url.replacingOccurrences(of: "a%20b", with: "a%20c"),
                                                                 headers: signed.headers, body: .bytes(Array("x".utf8))))
        #expect(elsewhere.status == 403 && elsewhere.errorCode == "SignatureDoesNotMatch")
    }

    @Test("web identity: STS's temporary credentials, whose session token signs requests moto then checks")
    func webIdentity() throws {
        let server = try ObjectStoreServer.moto()
        let workspace = try Workspace()
        try "eyJhbGciOiJSUzI1NiJ9.a-projected.service-account-token\n".write(toFile: workspace.path("token"), atomically: true, encoding: .utf8)
        // Web identity comes before the shared credentials file, as in the SDKs.
        try workspace.write("[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = fromfile\n", to: ".aws/credentials")
        // Set up unsigned: a role that may do anything, and its bucket.
        let setup = try server.python("""
            import json
            iam = boto("iam", "any", "any")
            allow = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
            iam.create_role(RoleName="runner", AssumeRolePolicyDocument=allow)
            iam.put_role_policy(RoleName="runner", PolicyName="all", PolicyDocument=allow)
            boto("s3", "any", "any").create_bucket(Bucket="photos")
            """)
        try #require(setup.status == 0, "\(setup.stderr)")
        try server.requireSignatures(after: 1)  // the unsigned AssumeRoleWithWebIdentity
        let role = "arn:aws:iam::123456789012:role/runner"
        let credentials = try AWSCredentials.resolve(environment: [
            "HOME": workspace.root, "AWS_ROLE_ARN": role, "AWS_WEB_IDENTITY_TOKEN_FILE": workspace.path("token"),
            "AWS_ROLE_SESSION_NAME": "shard-3", "AWS_ENDPOINT_URL_STS": server.endpoint])
        #expect(credentials.source == .webIdentity(roleARN: role) && credentials.source.description == "web identity (role \(role))")
        #expect(credentials.sessionToken != nil && (credentials.expiration ?? .distantPast) > Date())

        let store = try #require(S3Endpoint(url: server.endpoint, region: "us-east-1", addressing: .path))
        let body = Array("temporary".utf8)
        let put = store.signed("PUT", bucket: "photos", key: "shard-3.json", payloadHash: SigV4.payloadHash(of: body), credentials: credentials)
        #expect(try HTTPConnection().perform(put.http(.bytes(body))).status == 200)
        let get = store.signed("GET", bucket: "photos", key: "shard-3.json", credentials: credentials)
        #expect(try HTTPConnection().perform(get.http()).body == body)

        var withoutToken = get.headers
        withoutToken["x-amz-security-token"] = "not-the-token"
        let refused = try HTTPConnection().perform(HTTPRequest(get.method, get.url, headers: withoutToken))
        #expect(refused.status == 400 && refused.errorCode == "InvalidToken", "\(refused.status) \(refused.errorCode ?? "")")
    }

    @Test("STS refusing, or not answering, is an error that says so with its code")
    func stsRefused() throws {
        let server = try ObjectStoreServer.seaweedFS(accessKey: Self.accessKey, secretKey: Self.secret)
        let workspace = try Workspace()
        try "token".write(toFile: workspace.path("token"), atomically: true, encoding: .utf8)
        let base = ["HOME": workspace.root, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/nobody",
                    "AWS_WEB_IDENTITY_TOKEN_FILE": workspace.path("token")]
        // SeaweedFS's STS knows no role: AccessDenied.
        do throws(CredentialsError) {
            _ = try AWSCredentials.resolve(environment: base.merging(["AWS_ENDPOINT_URL_STS": server.endpoint]) { $1 })
            Issue.record("STS accepted an unknown role")
        } catch {
            guard case .stsRefused(let endpoint, 403, "AccessDenied", _) = error else { throw error }
            #expect(endpoint == server.endpoint && "\(error)".hasPrefix("STS at \(server.endpoint) refused AssumeRoleWithWebIdentity: HTTP 403 AccessDenied"))
        }
        let closed = "http://127.0.0.1:\(ObjectStoreServer.freePorts(1)[0])"
        do throws(CredentialsError) {
            _ = try AWSCredentials.resolve(environment: base.merging(["AWS_ENDPOINT_URL_STS": closed]) { $1 })
            Issue.record("a closed port answered")
        } catch {
            guard case .stsUnreachable(closed, _) = error else { throw error }
        }
        #expect(throws: CredentialsError.unreadable(path: workspace.path("gone"), reason: "No such file or directory")) {
            try AWSCredentials.resolve(environment: base.merging(["AWS_WEB_IDENTITY_TOKEN_FILE": workspace.path("gone")]) { $1 })
        }
    }

    /// A ListObjectsV2 page's keys and its continuation token.
    static func listing(_ page: [UInt8]) -> (keys: [String], next: String?) {
        final class Collector: NSObject, XMLParserDelegate {
            var keys: [String] = [], next: String?, text = ""
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                        attributes: [String: String] = [:]) { text = "" }
            func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                if name == "Key" { keys.append(text) } else if name == "NextContinuationToken" { next = text }
            }
        }
        let collector = Collector()
        let parser = XMLParser(data: Data(page))
        parser.delegate = collector
        _ = parser.parse()
        return (collector.keys, collector.next)
    }
}
