import Foundation
import Support
import Model
import ObjectStore

/// Where a job keeps its outputs and its site manifest: a folder, or a bucket in an S3-compatible
/// store, every difference between the two in its conformer: nothing else tests for `s3://` but the
/// job reader and `Job.destination(of:)`, where a new kind (Azure Blob) would add a case.
package protocol Destination: Sendable {
    /// What an item's fingerprint holds of where its output goes: objects written to another
    /// store, or with another `Cache-Control`, are written again. Empty for a folder.
    var identifier: String { get }
    /// Where a file bound for `path` (an output, the manifest) is written before it is published.
    func stagingPath(for path: String, uploads: String) -> String
    /// The folder `stagingPath` writes in, without naming the file (planning asks it of every item).
    func stagingFolder(for path: String, uploads: String) -> String
    /// Whether the output recorded done at `path` is still there.
    func holds(_ path: String, statting stats: FolderStat) -> Bool
    /// Publishes rendered outputs of this kind (each with its own place) under their final names,
    /// made durable or confirmed by the store, before any is recorded; one result per output.
    func publish(_ outputs: [StagedOutput], parallel: Int) -> [PublishFailure?]
    /// Publishes the document `stagingPath(for: path)` holds (the site manifest, written whole)
    /// as `path` unless it is what was published last; whether it went.
    func publishDocument(at path: String, uploads: String, mediaType: String) throws -> Bool
    /// Removes what runner wrote at `path`, and only that: a regular file, an object; without
    /// `really`, only says what removing it would do. Throws when the store refuses the run or
    /// cannot be reached.
    func remove(_ path: String, really: Bool) throws(ObjectStoreError) -> Removal
    /// How a document (the manifest) in the folder `base` names `path`.
    func reference(to path: String, from base: String) -> String
    /// Where a browser finds `path` from a page elsewhere (the report); nil: the file itself.
    func link(to path: String) -> String?
}

/// An output a worker rendered, to be published at `path` by its destination.
package struct StagedOutput: Sendable {
    package let temporary: String
    package let path: String
    package let mediaType: String
    package let place: any Destination

    package init(temporary: String, path: String, mediaType: String, place: any Destination) {
        (self.temporary, self.path, self.mediaType, self.place) = (temporary, path, mediaType, place)
    }
}

/// Why an output was not published: its own failure (the item fails, `write`), or its
/// destination's for the whole run (the store refused the run or stayed unreachable: it stops).
package enum PublishFailure: Error {
    case output(ItemFailure)
    case destination(ObjectStoreError)
}

/// What removing a path did.
public enum Removal: Sendable, Equatable, CustomStringConvertible {
    case removed
    case missing
    /// A symlink, folder or other non-regular file, which runner never writes.
    case notRegularFile
    /// The file could not be checked or deleted (errno).
    case failed(Int32)
    /// The store refused to delete the object (its words).
    case refused(String)

    public var description: String {
        switch self {
        case .removed: "removed"
        case .missing: "no file"
        case .notRegularFile: "not a regular file"
        case .failed(let number): "cannot delete it: \(String(cString: strerror(number)))"
        case .refused(let reason): "cannot delete it: \(reason)"
        }
    }
}

extension Job {
    /// Where `path` (an output recorded done, the manifest) is kept: a file's folder, or the bucket
    /// the first output writing to it writes with; nil for a bucket no output writes to now (which
    /// store holds it is not known).
    package func destination(of path: String) -> (any Destination)? {
        guard let object = ObjectURL(path) else { return FolderDestination.shared }
        return outputs.lazy.compactMap { $0.destination as? BucketDestination }.first { $0.bucket == object.bucket }
    }
}

/// Outputs in folders: published with `AtomicFile` (synced, renamed, synced), checked with `stat`.
package struct FolderDestination: Destination {
    package static let shared = FolderDestination()

    package var identifier: String { "" }

    package func stagingPath(for path: String, uploads: String) -> String { path }

    package func stagingFolder(for path: String, uploads: String) -> String { Paths.directory(of: path) }

    /// A regular file with bytes (runner writes no empty output; a folder or an emptied file there is not it).
    package func holds(_ path: String, statting stats: FolderStat) -> Bool {
        var info = stat()
        return stats.stat(path, &info) && (info.st_mode & S_IFMT) == S_IFREG && info.st_size > 0
    }

    package func publish(_ outputs: [StagedOutput], parallel: Int) -> [PublishFailure?] {
        AtomicFile.publish(outputs.map { AtomicFile.Staged(temporary: $0.temporary, path: $0.path) }).map { $0.map(PublishFailure.output) }
    }

    /// Written in place (`AtomicFile.Streamed` leaves an unchanged file alone).
    package func publishDocument(at path: String, uploads: String, mediaType: String) throws -> Bool { false }

    /// Checks that `path` is a regular file, not following a symlink, then deletes it, both
    /// through one open folder, so the file cannot become a link in between.
    package func remove(_ path: String, really: Bool) -> Removal {
        let folder = open(Paths.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return errno == ENOENT || errno == ENOTDIR ? .missing : .failed(errno) }
        defer { close(folder) }
        let name = Paths.lastComponent(path)
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return errno == ENOENT ? .missing : .failed(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .notRegularFile }
        return !really || unlinkat(folder, name, 0) == 0 ? .removed : .failed(errno)
    }

    package func reference(to path: String, from base: String) -> String { Paths.relative(path, from: base) }

    package func link(to path: String) -> String? { nil }
}

/// Outputs in a bucket: rendered into the job's upload folder, PUT with their media type and
/// `Cache-Control` (multipart above `partSize`), and trusted as recorded (no request per output
/// on a night with nothing to do).
package struct BucketDestination: Destination {
    package static let immutable = "public, max-age=31536000, immutable"
    package static let revalidated = "public, max-age=86400"

    package let endpoint: S3Endpoint
    package let bucket: String
    package let cacheControl: String
    /// An object larger than this goes up in parts of this size.
    package let partSize: Int
    /// Writes and deletes its objects over connections kept from batch to batch.
    private let writer: ObjectWriter

    package init(endpoint: S3Endpoint, bucket: String, cacheControl: String, partSize: Int, retry: RetryPolicy) {
        (self.endpoint, self.bucket, self.cacheControl, self.partSize) = (endpoint, bucket, cacheControl, partSize)
        writer = ObjectWriter(retry: retry)
    }

    /// The part size changes no object.
    package var identifier: String { ";store:\(endpoint.scheme)://\(endpoint.authority)/\(endpoint.addressing.rawValue);cacheControl:\(cacheControl)" }

    /// Under a hash of its URL in the upload folder.
    package func stagingPath(for path: String, uploads: String) -> String {
        uploads + "/" + StableHash.hex(path) + "." + Paths.splitExtension(Paths.lastComponent(path)).ext
    }

    package func stagingFolder(for path: String, uploads: String) -> String { uploads }

    /// An object is trusted as recorded: a night with nothing changed sends no request per output.
    package func holds(_ path: String, statting stats: FolderStat) -> Bool { true }

    /// PUTs every output in parallel, each with its own output's `Cache-Control` and part size;
    /// the staged file goes once sent, whatever the answer (a failed one is rendered again).
    package func publish(_ outputs: [StagedOutput], parallel: Int) -> [PublishFailure?] {
        let changes = outputs.map { output in
            let place = output.place as? BucketDestination ?? self
            return ObjectWriter.Change.put(place.object(output.path), endpoint: place.endpoint,
                                           file: output.temporary, mediaType: output.mediaType, cacheControl: place.cacheControl,
                                           partSize: place.partSize)
        }
        defer { for output in outputs { unlink(output.temporary) } }
        return writer.perform(changes, parallel: parallel).enumerated().map { index, failure in
            switch failure {
            case nil: nil
            case .object(let reason)?: .output(ItemFailure(.write, "\(outputs[index].path): \(reason)"))
            case .store(let error)?: .destination(error)
            }
        }
    }

    /// PUT from its copy in the upload folder unless the copy is still the one the store confirmed
    /// last (its `FileIdentity`, noted beside it after each PUT): a quiet night sends nothing, and a
    /// crash before the PUT leaves a copy the next run sends.
    package func publishDocument(at path: String, uploads: String, mediaType: String) throws -> Bool {
        let copy = stagingPath(for: path, uploads: uploads)
        let noted = copy + ".uploaded"
        guard let identity = FileIdentity(path: copy) else { throw RunFileUnwritable(file: "the manifest", path: copy, reason: "it vanished") }
        if AtomicFile.note(at: noted) == identity.description { return false }
        let put = ObjectWriter.Change.put(object(path), endpoint: endpoint, file: copy,
                                          mediaType: mediaType, cacheControl: "no-cache", partSize: partSize)
        switch writer.perform([put], parallel: 1)[0] {
        case nil: break
        case .object(let reason)?: throw RunFileUnwritable(file: "the manifest", path: path, reason: reason)
        case .store(let error)?: throw error
        }
        do { try AtomicFile.write(Data(identity.description.utf8), to: noted) } catch {
            throw RunFileUnwritable(file: "the manifest's upload note", path: noted, reason: error.message)
        }
        return true
    }

    /// The object `path` names: `s3://BUCKET/KEY`, as `Job.destination(of:)` gives this destination only for such a path.
    private func object(_ path: String) -> ObjectURL { ObjectURL(path) ?? ObjectURL(bucket: bucket, key: path) }

    /// S3 answers a key already gone as deleted.
    package func remove(_ path: String, really: Bool) throws(ObjectStoreError) -> Removal {
        guard really else { return .removed }
        switch writer.perform([.delete(object(path), endpoint: endpoint)], parallel: 1)[0] {
        case nil: return .removed
        case .object(let reason)?: return .refused(reason)
        case .store(let error)?: throw error
        }
    }

    /// The object's own URL at its store: a public bucket's object, or one the browser may read.
    package func link(to path: String) -> String? { endpoint.url(bucket: object(path).bucket, key: object(path).key) }

    /// By its key relative to a document in the same bucket, else by its URL.
    package func reference(to path: String, from base: String) -> String {
        guard let object = ObjectURL(path), let folder = ObjectURL(base), object.bucket == folder.bucket else { return path }
        return Paths.relative("/" + object.key, from: "/" + folder.key)
    }
}
