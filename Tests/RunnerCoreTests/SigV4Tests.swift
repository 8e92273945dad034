import Foundation
import ObjectStore
import Testing

/// SigV4 against AWS's published examples: the signature test suite's requests (service `service`)
/// and the S3 API reference's "Examples: Signature Calculations" (GET Object, PUT Object, GET
/// Bucket Lifecycle, Get Bucket).
@Suite("SigV4 signatures")
struct SigV4Tests {
    static let suite = AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                      source: .environment)
    static let suiteToken = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuw"
        + "thAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNV"
        + "XAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
    static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// One request of the suite: its path and query as the test gives them, unencoded.
    private func suiteSignature(_ method: String = "GET", path: String = "/", query: [String: String] = [:],
                                token: String? = nil) -> String {
        var headers = ["Host": "example.amazonaws.com", "X-Amz-Date": "20150830T123600Z"]
        if let token { headers["X-Amz-Security-Token"] = token }
        let authorization = SigV4.authorization(method: method, path: SigV4.encoded(path, keepingSlashes: true),
                                                query: SigV4.canonicalQuery(query), headers: headers, payloadHash: Self.emptyHash,
                                                credentials: Self.suite, region: "us-east-1", service: "service",
                                                amzDate: "20150830T123600Z")
        return String(authorization.split(separator: "=").last ?? "")
    }

    @Test("the signature test suite's requests sign as published")
    func testSuite() {
        let unreserved = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        #expect(suiteSignature() == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")  // get-vanilla
        #expect(suiteSignature(query: ["Param2": "value2", "Param1": "value1"])
                == "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")  // get-vanilla-query-order-key-case
        #expect(suiteSignature(query: ["ሴ": "bar"]) == "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04")  // get-vanilla-utf8-query
        #expect(suiteSignature(query: [unreserved: unreserved])
                == "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197")  // get-vanilla-query-unreserved
        #expect(suiteSignature(path: "/" + unreserved) == "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f")  // get-unreserved
        #expect(suiteSignature(path: "/ሴ") == "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85")  // get-utf8
        #expect(suiteSignature("POST") == "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")  // post-vanilla
        #expect(suiteSignature("POST", token: Self.suiteToken)
                == "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead")  // post-sts-header-before
    }

    static let s3 = AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                   source: .environment)
    static let examples = S3Endpoint(url: "https://s3.amazonaws.com", region: "us-east-1", addressing: .virtualHosted)!
    static let exampleDate = Date(timeIntervalSince1970: 1_369_353_600)  // Fri, 24 May 2013 00:00:00 GMT

    private func example(_ method: String, key: String = "", query: [String: String] = [:], headers: [String: String] = [:],
                         payloadHash: String = SigV4Tests.emptyHash) -> SignedRequest {
        Self.examples.signed(method, bucket: "examplebucket", key: key, query: query, headers: headers, payloadHash: payloadHash,
                             credentials: Self.s3, at: Self.exampleDate)
    }

    @Test("the S3 reference's examples sign as published, through the request the store is sent")
    func s3Examples() {
        let credential = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        let get = example("GET", key: "test.txt", headers: ["Range": "bytes=0-9"])
        #expect(get.url == "https://examplebucket.s3.amazonaws.com/test.txt")
        #expect(get.headers["Authorization"] == credential + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(get.headers["x-amz-date"] == "20130524T000000Z" && get.headers["x-amz-content-sha256"] == Self.emptyHash)

        let body = Array("Welcome to Amazon S3.".utf8)
        #expect(SigV4.payloadHash(of: body) == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let put = example("PUT", key: "test$file.text", headers: ["Date": "Fri, 24 May 2013 00:00:00 GMT",
                                                                   "x-amz-storage-class": "REDUCED_REDUNDANCY"],
                          payloadHash: SigV4.payloadHash(of: body))
        #expect(put.url == "https://examplebucket.s3.amazonaws.com/test%24file.text")
        #expect(put.headers["Authorization"] == credential
                + "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")

        let lifecycle = example("GET", query: ["lifecycle": ""])
        #expect(lifecycle.url == "https://examplebucket.s3.amazonaws.com/?lifecycle=")
        #expect(lifecycle.headers["Authorization"]?.hasSuffix("fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)

        let list = example("GET", query: ["prefix": "J", "max-keys": "2"])
        #expect(list.url == "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J")
        #expect(list.headers["Authorization"]?.hasSuffix("34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test("a key is encoded once, byte by byte, its slashes kept; the URL sent is the path signed")
    func keysAndAddressing() throws {
        #expect(SigV4.encoded("a b+c=d%e/é 日本~-_.", keepingSlashes: true)
                == "a%20b%2Bc%3Dd%25e/%C3%A9%20%E6%97%A5%E6%9C%AC~-_.")
        #expect(SigV4.encoded("a/b", keepingSlashes: false) == "a%2Fb")
        #expect(SigV4.canonicalQuery(["prefix": "日本/a b", "list-type": "2", "continuation-token": "x+y="])
                == "continuation-token=x%2By%3D&list-type=2&prefix=%E6%97%A5%E6%9C%AC%2Fa%20b")

        let local = try #require(S3Endpoint(url: "HTTP://127.0.0.1:8333/", region: "us-east-1", addressing: .path))
        let signed = local.signed("GET", bucket: "photos", key: "2024/a b+c.jpg", credentials: Self.s3)
        #expect(signed.url == "http://127.0.0.1:8333/photos/2024/a%20b%2Bc.jpg")
        #expect(local.signed("GET", bucket: "photos", query: ["list-type": "2"], credentials: Self.s3).url
                == "http://127.0.0.1:8333/photos?list-type=2")
        #expect(S3Endpoint(url: "https://s3.example.com:443", region: "auto", addressing: .path)?.authority == "s3.example.com")
        #expect(S3Endpoint(url: "http://s3.example.com:9000", region: "auto", addressing: .path)?.authority == "s3.example.com:9000")
        for unusable in ["s3.example.com", "127.0.0.1:9000", "ftp://host", "https://", "https://host/path", "https://user@host"] {
            #expect(S3Endpoint(url: unusable, region: "us-east-1", addressing: .path) == nil, "\(unusable)")
        }
    }
}
