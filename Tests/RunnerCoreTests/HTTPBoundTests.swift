import Foundation
import Testing
import TestSupport

/// What the one HTTP client holds in memory has a bound: a document (a listing page, an STS answer)
/// up to `HTTPResponse.documentLimit`, an error's body up to `errorBodyLimit` (the rest dropped),
/// the headers up to `headersLimit`; at the bound it is taken, one byte over it refused.
@Suite("Bounds on what a response holds in memory")
struct HTTPBoundTests {
    func get(_ server: HTTPTestServer, _ path: String) -> Result<HTTPResponse, HTTPFailure> {
        Result { () throws(HTTPFailure) in try HTTPConnection().perform(HTTPRequest("GET", server.url(path))) }
    }

    @Test("a document of exactly 8 MiB is read; one byte more fails as too large, before the rest is held")
    func documents() throws {
        let server = try HTTPTestServer()
        let limit = HTTPResponse.documentLimit
        #expect((try? get(server, "/bytes/\(limit)").get())?.body.count == limit)
        #expect(get(server, "/bytes/\(limit + 1)").failure?.reason == .tooLarge(limit: limit))
    }

    @Test("an error's body is kept up to 64 KiB, the rest dropped; the answer stands")
    func errorBodies() throws {
        let server = try HTTPTestServer()
        let answer = try get(server, "/errorbytes/\(HTTPResponse.errorBodyLimit * 3)").get()
        #expect(answer.status == 500 && answer.body.count == HTTPResponse.errorBodyLimit)
    }

    @Test("headers up to 64 KiB in all are read; a header line past it fails the request")
    func headers() throws {
        let server = try HTTPTestServer()
        #expect((try? get(server, "/headers/\(HTTPResponse.headersLimit - 1024)").get())?.status == 200)
        #expect(get(server, "/headers/\(HTTPResponse.headersLimit + 1)").failure?.reason == .tooLarge(limit: HTTPResponse.headersLimit))
    }
}

extension Result {
    fileprivate var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
