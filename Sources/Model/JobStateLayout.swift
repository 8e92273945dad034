import Foundation
import Support

/// Which state databases belong to a job: its own (`thumbs.sqlite`) and each shard's beside it
/// under any shard count (`thumbs.shard-3-of-16.sqlite`). The one place that knows their names;
/// runs, reports, `unblock` and `prune` all ask it.
public struct JobStateLayout: Sendable {
    public struct Database: Sendable, Equatable {
        public let path: String
        /// Nil for the job's own, unsharded database.
        public let shard: Shard?
        /// 0 for the unsharded database, else the shard count: databases of one layout ran together.
        public var layout: Int { shard?.count ?? 0 }
    }

    /// The job's own database path; every shard's sits beside it.
    public let jobStatePath: String
    /// Every database of the job that exists: the unsharded one first, then by shard count and index.
    public let databases: [Database]

    /// Lists the job's databases as they are on disk now.
    public init(jobStatePath: String) {
        self.jobStatePath = jobStatePath
        let folder = Paths.directory(of: jobStatePath)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let shards = names.compactMap { name in
            Self.shard(named: name, jobStatePath: jobStatePath).map { Database(path: folder + "/" + name, shard: $0) }
        }.sorted { ($0.layout, $0.shard!.index) < ($1.layout, $1.shard!.index) }
        let own = FileManager.default.fileExists(atPath: jobStatePath) ? [Database(path: jobStatePath, shard: nil)] : []
        databases = own + shards
    }

    /// The database a run of `shard` (nil: the whole job) writes.
    public static func path(for shard: Shard?, jobStatePath: String) -> String {
        shard?.partPath(of: jobStatePath) ?? jobStatePath
    }

    /// Whether the database `name` (a file name) is of `shard`'s layout (its count's; nil: unsharded).
    public static func isSameLayout(named name: String, jobStatePath: String, as shard: Shard?) -> Bool {
        (Self.shard(named: name, jobStatePath: jobStatePath)?.count ?? 0) == (shard?.count ?? 0)
    }

    /// Whether `name` (a file name) is one of the job's databases: its own or a shard's.
    public static func isDatabase(named name: String, jobStatePath: String) -> Bool {
        name == Paths.lastComponent(jobStatePath) || shard(named: name, jobStatePath: jobStatePath) != nil
    }

    /// The shard whose database `name` is (a file name in the job's folder), if it is one.
    private static func shard(named name: String, jobStatePath: String) -> Shard? {
        let (stem, ext) = Paths.splitExtension(Paths.lastComponent(jobStatePath))
        let prefix = stem + ".shard-", suffix = ext.isEmpty ? "" : "." + ext
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count > prefix.count + suffix.count else { return nil }
        let middle = name.dropFirst(prefix.count).dropLast(suffix.count).split(separator: "-", omittingEmptySubsequences: false)
        guard middle.count == 3, middle[1] == "of", middle[0].allSatisfy(\.isASCII), middle[2].allSatisfy(\.isASCII),
              let index = Int(middle[0]), let count = Int(middle[2]) else { return nil }
        return Shard(index: index, count: count)
    }

    /// Databases of layouts other than `shard`'s (work recorded under another shard count, or
    /// unsharded), which a run's planning reads. Shards of the run's own count hold other sources
    /// only, and may be starting at this very moment, so they are left out.
    public func otherLayouts(than shard: Shard?) -> [String] {
        databases.filter { $0.layout != (shard?.count ?? 0) }.map(\.path)
    }

    /// The databases that answer for the job now, those of the layout whose run started last
    /// (`lastStart` of each database), and those of earlier layouts, kept for planning lookups.
    public func current(lastStart: (Database) throws -> Date?) rethrows -> (current: [Database], earlier: [Database]) {
        let newest = Dictionary(try databases.map { ($0.layout, try lastStart($0) ?? .distantPast) }, uniquingKeysWith: { max($0, $1) })
        guard let layout = newest.max(by: { ($0.value, -$0.key) < ($1.value, -$1.key) })?.key else { return ([], []) }
        return (databases.filter { $0.layout == layout }, databases.filter { $0.layout != layout })
    }
}
