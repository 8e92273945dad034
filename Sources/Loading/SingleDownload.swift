import Planning

extension Downloader {
    /// Fetches one source into `destination` with the job's HTTP settings (timeouts, retries, size
    /// limit, the check that the body is an image), unconditionally and outside the originals
    /// cache: `runner preview`.
    package func fetch(_ source: any FetchedSource, to destination: String) -> DownloadResult {
        var request: DownloadRequest? = DownloadRequest(source: source, etag: nil, lastModified: nil, destination: destination)
        var result: DownloadResult?
        run(next: { defer { request = nil }; return request }, canStart: { true }, shouldStop: { false },
            deliver: { _, delivered in result = delivered })
        return result ?? .failed(DownloadFailure(reason: .transfer(.local), detail: "the transfer ended without a result"), attempts: 0)
    }
}
