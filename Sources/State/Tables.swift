import Foundation
import GRDB
import Model

/// The state database's tables and their columns, spelled once: rows are read through these,
/// never by a column name written again at the read.
enum RunTable {
    static let id = Column("id"), startedAt = Column("started_at"), endedAt = Column("ended_at"), pid = Column("pid")
    static let runnerVersion = Column("runner_version"), vipsVersion = Column("vips_version")
    static let planned = Column("planned"), upToDate = Column("up_to_date"), notRevalidated = Column("not_revalidated")
    static let done = Column("done")
    static let failed = Column("failed"), blocked = Column("blocked"), outcome = Column("outcome"), exitCode = Column("exit_code")
}

enum ItemTable {
    static let key = Column("key"), sourceKey = Column("source_key"), outputName = Column("output_name")
    static let state = Column("state"), attempts = Column("attempts"), outputPath = Column("output_path")
    static let errorKind = Column("error_kind"), errorMessage = Column("error_message"), warning = Column("warning")
    static let updatedAt = Column("updated_at")
    // v9: output facts
    static let width = Column("width"), height = Column("height"), bytes = Column("bytes"), mediaType = Column("media_type")
    static let contentHash = Column("content_hash")
}

/// v11: shard plan (`SourceMemory`).
enum ShardPlanTable {
    static let inputs = Column("inputs")
}

enum ShardPlanSourceTable {
    static let position = Column("position"), spec = Column("spec"), line = Column("line")
}

/// v13: shard plan walks (`WalkedPath`).
enum ShardPlanWalkedTable {
    static let path = Column("path"), seen = Column("seen")
}

/// v12: clean folders (`StateStore.cleanFolders`).
enum CleanFolderTable {
    static let path = Column("path"), identity = Column("identity")
}

enum BlacklistTable {
    static let url = Column("url"), kind = Column("kind"), httpStatus = Column("http_status"), message = Column("message")
    static let firstSeen = Column("first_seen"), lastSeen = Column("last_seen"), count = Column("count")
}

enum OriginalTable {
    static let sourceKey = Column("source_key"), url = Column("url"), file = Column("file"), etag = Column("etag")
    static let lastModified = Column("last_modified"), contentHash = Column("content_hash"), size = Column("size")
    static let fetchedAt = Column("fetched_at"), validatedAt = Column("validated_at"), usedAt = Column("used_at")
}

enum SourceTable {
    static let key = Column("key"), location = Column("location"), fingerprint = Column("fingerprint"), bytes = Column("bytes")
    static let width = Column("width"), height = Column("height"), format = Column("format")
    static let contentHash = Column("content_hash"), updatedAt = Column("updated_at")
}

enum DerivedTable {
    static let sourceKey = Column("source_key"), identifier = Column("identifier"), name = Column("name")
    static let fingerprint = Column("fingerprint"), value = Column("value")
}

extension StoredSource: FetchableRecord, TableRecord {
    package static let databaseTableName = "source"

    package init(row: Row) {
        self.init(key: row[SourceTable.key], location: row[SourceTable.location] ?? row[SourceTable.key],
                  fingerprint: row[SourceTable.fingerprint],
                  bytes: row[SourceTable.bytes], width: row[SourceTable.width], height: row[SourceTable.height],
                  format: row[SourceTable.format], contentHash: row[SourceTable.contentHash],
                  updatedAt: Date(timeIntervalSince1970: row[SourceTable.updatedAt]))
    }

    /// `source.location` as stored: NULL when it is the key (a file's path), stored once then.
    static func storedLocation(_ location: String, key: String) -> String? { location == key ? nil : location }
}

extension StoredDerivedValue: FetchableRecord, PersistableRecord {
    package static let databaseTableName = "derived"

    package init(row: Row) {
        self.init(sourceKey: row[DerivedTable.sourceKey], identifier: row[DerivedTable.identifier], name: row[DerivedTable.name],
                  fingerprint: row[DerivedTable.fingerprint], json: row[DerivedTable.value])
    }

    package func encode(to container: inout PersistenceContainer) {
        container[DerivedTable.sourceKey] = sourceKey
        container[DerivedTable.identifier] = identifier
        container[DerivedTable.name] = name
        container[DerivedTable.fingerprint] = fingerprint
        container[DerivedTable.value] = json
    }
}

extension RunRecord: FetchableRecord {
    public init(row: Row) {
        self.init(id: row[RunTable.id], startedAt: Date(timeIntervalSince1970: row[RunTable.startedAt]),
                  endedAt: (row[RunTable.endedAt] as Double?).map(Date.init(timeIntervalSince1970:)),
                  pid: row[RunTable.pid], runnerVersion: row[RunTable.runnerVersion], vipsVersion: row[RunTable.vipsVersion],
                  planned: row[RunTable.planned], upToDate: row[RunTable.upToDate], notRevalidated: row[RunTable.notRevalidated],
                  done: row[RunTable.done],
                  failed: row[RunTable.failed], blocked: row[RunTable.blocked], outcome: row[RunTable.outcome],
                  exitCode: row[RunTable.exitCode])
    }
}

extension BlacklistEntry: FetchableRecord {
    public init(row: Row) {
        self.init(url: row[BlacklistTable.url], kind: BlacklistReason.fromDatabaseValue(row[BlacklistTable.kind]),
                  httpStatus: row[BlacklistTable.httpStatus],
                  message: row[BlacklistTable.message], firstSeen: Date(timeIntervalSince1970: row[BlacklistTable.firstSeen]),
                  lastSeen: Date(timeIntervalSince1970: row[BlacklistTable.lastSeen]), count: row[BlacklistTable.count])
    }
}

extension CachedOriginal: FetchableRecord {
    package init(row: Row) {
        self.init(sourceKey: row[OriginalTable.sourceKey], url: row[OriginalTable.url], file: row[OriginalTable.file],
                  etag: row[OriginalTable.etag], lastModified: row[OriginalTable.lastModified],
                  contentHash: row[OriginalTable.contentHash], size: row[OriginalTable.size], fetchedAt: row[OriginalTable.fetchedAt],
                  validatedAt: row[OriginalTable.validatedAt], usedAt: row[OriginalTable.usedAt])
    }
}

/// Stored by its spelling in `blacklist.kind`; one this version does not know reads as nil (a
/// failed conversion, which GRDB's typed subscript would trap on, so rows read it through
/// `fromDatabaseValue`).
extension BlacklistReason: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { description.databaseValue }

    public static func fromDatabaseValue(_ value: DatabaseValue) -> BlacklistReason? {
        String.fromDatabaseValue(value).flatMap(BlacklistReason.init)
    }
}

extension SiteManifestItem: FetchableRecord {
    package init(row: Row) {
        self.init(sourceKey: row[ItemTable.sourceKey], outputName: row[ItemTable.outputName],
                  state: ItemState(rawValue: row[ItemTable.state]) ?? .pending, outputPath: row[ItemTable.outputPath],
                  errorKind: row[ItemTable.errorKind], errorMessage: row[ItemTable.errorMessage], warning: row[ItemTable.warning],
                  width: row[ItemTable.width], height: row[ItemTable.height], bytes: row[ItemTable.bytes],
                  mediaType: row[ItemTable.mediaType], contentHash: row[ItemTable.contentHash], url: row[OriginalTable.url])
    }
}
