internal import CCurl
import Foundation
import Support
import Model
import JobFile
import ObjectStore

/// One download in flight on the downloader's multi handle: its request, made by the source's kind and
/// sent by `HTTPConnection`, its body spilled to its temporary file beyond `Downloader.memoryLimit`.
final class Transfer {
    enum Completion {
        /// The request's result, with nothing to store.
        case ended(DownloadResult)
        /// A verified 2xx body, for a store thread.
        case store(ReceivedBody)
    }

    let attempt: Attempt
    let connection: HTTPConnection
    private let temporary: String
    /// The temporary file, once the body outgrew `Downloader.memoryLimit`.
    private var descriptor: Int32 = -1

    init(_ attempt: Attempt, settings: RemoteSettings, userAgent: String, buffer: [UInt8]) throws(DownloadFailure) {
        self.attempt = attempt
        let request = attempt.request
        // Named after this process: while it lives, no other run removes the file.
        temporary = AtomicFile.temporaryPath(for: request.destination, owner: getpid())
        do { connection = try HTTPConnection() } catch { throw DownloadFailure(reason: .transfer(error.reason), detail: error.detail) }
        var sent = request.source.request(settings)
        if let etag = request.etag { sent.headers["If-None-Match"] = etag }
        if let lastModified = request.lastModified { sent.headers["If-Modified-Since"] = lastModified }
        (sent.timeout, sent.connectTimeout) = (settings.timeout, settings.connectTimeout)
        (sent.lowSpeed, sent.userAgent, sent.multiplexed) = ((settings.lowSpeedLimit, settings.lowSpeedTime), userAgent, true)
        sent.answer = .spilling(inMemory: Downloader.memoryLimit, limit: settings.maxDownloadBytes, buffer: buffer) { [unowned self] in
            descriptor = Downloader.createTemporary(temporary)
            return descriptor
        }
        connection.prepare(sent)
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
            unlink(temporary)
        }
    }

    /// Classifies the ended transfer; a verified 2xx body goes on to be stored.
    func finish(_ code: CURLcode) -> Completion {
        let request = attempt.request
        let response: HTTPResponse
        do { response = try connection.finish(code.rawValue) } catch {
            return .ended(.failed(DownloadFailure(reason: .transfer(error.reason), detail: error.detail), attempts: attempt.number))
        }
        if response.status == 304 && (request.etag != nil || request.lastModified != nil) { return .ended(.notModified) }
        guard (200..<300).contains(response.status) else {
            let meaning = request.source.meaning(ofStatus: response.status, body: response.body)
            let failure = DownloadFailure(reason: .httpStatus(response.status, meaning), detail: "", retryAfter: response.retryAfter)
            return .ended(.failed(failure, attempts: attempt.number))
        }
        guard ImageSignature.format(Array(response.head.prefix(ImageSignature.prefixLength))) != nil else {
            let failure = DownloadFailure(reason: .notAnImage(contentType: response.headers["content-type"]), detail: "")
            return .ended(.failed(failure, attempts: attempt.number))
        }
        let body = ReceivedBody(attempt, temporary: temporary, descriptor: descriptor, memory: response.body, size: response.size,
                                etag: response.headers["etag"], lastModified: response.headers["last-modified"])
        descriptor = -1  // the body owns the temporary file now
        return .store(body)
    }
}
