import Foundation
import Support
import JobFile
import Planning
import ObjectStore

/// A recorded item the job no longer plans at its recorded path: its source is gone, its output
/// left the job, or its output path changed.
public struct Orphan: Sendable {
    /// Why pruning leaves an orphan's file alone.
    public enum KeptBecause: Sendable, CustomStringConvertible {
        /// An item of the job writes this path now.
        case writtenByJob
        /// Not recorded done: runner may never have written the file.
        case notDone
        case missing
        /// A symlink, folder or other non-regular file, which runner never writes.
        case notRegularFile
        /// The file could not be checked or deleted (errno).
        case failed(Int32)
        /// The object store refused to delete the object (its words).
        case refused(String)
        /// An object in a bucket no output of the job writes to now: which store holds it is not known.
        case unknownStore

        public var description: String {
            switch self {
            case .writtenByJob: "the job writes this path now"
            case .notDone: "not recorded done"
            case .missing: "no file"
            case .notRegularFile: "not a regular file"
            case .failed(let number): "cannot delete it: \(String(cString: strerror(number)))"
            case .refused(let reason): "cannot delete it: \(reason)"
            case .unknownStore: "no output of the job writes to its bucket now, so its store is not known"
            }
        }
    }

    public let key: String
    public let outputPath: String
    /// nil when pruning deletes (or has deleted) the file.
    public let keptBecause: KeptBecause?
}

/// The items a job plans now, as 64-bit digests of (key, output path), of output paths and of
/// source keys (16 MB each per million): what tells a recorded item or source from an orphan. A
/// chance match only ever keeps a row or a file, so 64 bits do here where `DigestSet` needs 128.
package struct CurrentItems {
    /// `{hash}` outputs by name: their items are planned at a path with `{hash}` in it.
    private let hashed: [String: PathTemplate]

    /// The outputs, for the store of an orphan's bucket; and what deletes their objects.
    private let outputs: [OutputSpec]
    private let writer: ObjectWriter

    package init(outputs: [OutputSpec], retry: RetryPolicy = .standard) {
        writer = ObjectWriter(parallel: 1, retry: retry)
        hashed = Dictionary(outputs.compactMap { $0.template.hashSuffix == nil ? nil : ($0.name, $0.template) }, uniquingKeysWith: { first, _ in first })
        self.outputs = outputs
    }

    /// The path `recorded` was planned at: a `{hash}` output's with `{hash}` in place of its digits.
    private func plannedPath(_ recorded: ItemRecord) -> String {
        hashed[recorded.outputName]?.planned(from: recorded.outputPath) ?? recorded.outputPath
    }

    private var items = Set<UInt64>()
    private var paths = Set<UInt64>()
    private var sources = Set<UInt64>()

    package mutating func insert(_ source: PlannedSource) {
        sources.insert(StableHash.value(source.key))
        for item in source.items {
            items.insert(StableHash.value(item.key + "\0" + item.outputPath))
            paths.insert(StableHash.value(item.outputPath))
        }
    }

    package func plans(_ recorded: ItemRecord) -> Bool {
        items.contains(StableHash.value(recorded.key + "\0" + plannedPath(recorded)))
    }

    /// Whether the job plans the source `key` (a recorded `source` row and its derived values).
    package func plansSource(_ key: String) -> Bool {
        sources.contains(StableHash.value(key))
    }

    /// `recorded` as an orphan, its file deleted first when `delete` is set and runner wrote it:
    /// recorded done at that path, still a regular file there (an object: deleted from its store),
    /// and no current item's output. Throws when the store refuses the run or cannot be reached.
    package func orphan(_ recorded: ItemRecord, delete: Bool) throws(ObjectStoreError) -> Orphan {
        let kept: Orphan.KeptBecause? = if paths.contains(StableHash.value(plannedPath(recorded))) {
            .writtenByJob
        } else if recorded.state != .done {
            .notDone
        } else if let object = ObjectURL(recorded.outputPath) {
            try removeObject(object, really: delete)
        } else {
            Self.removeRegularFile(recorded.outputPath, really: delete)
        }
        return Orphan(key: recorded.key, outputPath: recorded.outputPath, keptBecause: kept)
    }

    /// With `really`, deletes the object through the store the job's outputs write its bucket
    /// with now (an output moved to another bucket may write another store); S3 answers a key
    /// already gone as deleted.
    private func removeObject(_ object: ObjectURL, really: Bool) throws(ObjectStoreError) -> Orphan.KeptBecause? {
        guard let endpoint = outputs.bucketOutput(writingTo: object.bucket)?.endpoint else { return .unknownStore }
        guard really else { return nil }
        switch writer.perform([.delete(object, endpoint: endpoint)])[0] {
        case nil: return nil
        case .object(let reason)?: return .refused(reason)
        case .store(let error)?: throw error
        }
    }

    /// Checks that `path` is a regular file, not following a symlink, and with `really` deletes it.
    /// Check and removal go through one open folder, so the file cannot become a link in between.
    private static func removeRegularFile(_ path: String, really: Bool) -> Orphan.KeptBecause? {
        let folder = open(Paths.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return errno == ENOENT || errno == ENOTDIR ? .missing : .failed(errno) }
        defer { close(folder) }
        let name = Paths.lastComponent(path)
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return errno == ENOENT ? .missing : .failed(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .notRegularFile }
        if really && unlinkat(folder, name, 0) != 0 { return .failed(errno) }
        return nil
    }
}
