import Foundation
import GRDB
import Support
import Model
import Planning

// Each table has one record type; its `Columns` spell the column names once, for SQL too.
// A value stored by its spelling is read by `stored`: a newer runner's spelling comes with a
// migration, refused first (`newerRunner`), so one this runner does not know means a damaged or
// hand-edited database: `StateDatabaseError.Kind.unknownValue` (exit 2), never a trap or a guess.

extension DefaultStringInterpolation {
    /// A column's name in SQL text.
    mutating func appendInterpolation(_ column: some ColumnExpression) { appendLiteral(column.name) }
}

extension RawRepresentable where Self: DatabaseValueConvertible, RawValue == String {
    /// As SQL text, for statements that name a value.
    var sql: String { "'\(rawValue)'" }
}

extension ItemState: DatabaseValueConvertible {}
extension ItemFailure.Kind: DatabaseValueConvertible {}
extension RunOutcome: DatabaseValueConvertible {}

/// A stored value this runner never writes (`Row.stored`); the store's connection names the file
/// it came from (`StateDatabaseError.Kind.unknownValue`).
struct UnknownStoredValue: Error, CustomStringConvertible {
    let table: String, column: String, value: DatabaseValue

    var description: String { "\(table).\(column) holds \(value)" }
}

extension DatabaseValue {
    /// This value of `column` (of `table`); one this runner never writes throws `UnknownStoredValue`.
    func stored<Value: DatabaseValueConvertible>(_ column: some ColumnExpression, of table: any TableRecord.Type) throws -> Value {
        guard let value = Value.fromDatabaseValue(self) else {
            throw UnknownStoredValue(table: table.databaseTableName, column: column.name, value: self)
        }
        return value
    }
}

extension Row {
    func stored<Value: DatabaseValueConvertible>(_ column: some ColumnExpression, of table: any TableRecord.Type) throws -> Value {
        try (self[column.name] as DatabaseValue).stored(column, of: table)
    }
}

extension RunRecord: FetchableRecord, TableRecord {
    public static let databaseTableName = "run"

    public enum Columns: String, ColumnExpression {
        case id, startedAt = "started_at", endedAt = "ended_at", pid, runnerVersion = "runner_version", vipsVersion = "vips_version"
        case limits, planned, upToDate = "up_to_date", notRevalidated = "not_revalidated", done, failed, blocked, skipped, outcome
        case exitCode = "exit_code"
    }

    public init(row: Row) throws {
        self.init(id: row[Columns.id], startedAt: Date(timeIntervalSince1970: row[Columns.startedAt]),
                  endedAt: (row[Columns.endedAt] as Double?).map(Date.init(timeIntervalSince1970:)),
                  pid: row[Columns.pid], runnerVersion: row[Columns.runnerVersion], vipsVersion: row[Columns.vipsVersion],
                  planned: row[Columns.planned], upToDate: row[Columns.upToDate], notRevalidated: row[Columns.notRevalidated],
                  done: row[Columns.done], failed: row[Columns.failed], blocked: row[Columns.blocked],
                  skipped: row[Columns.skipped], outcome: try row.stored(Columns.outcome, of: Self.self), exitCode: row[Columns.exitCode])
    }
}

extension ItemRecord: FetchableRecord, TableRecord {
    package static let databaseTableName = "item"

    package enum Columns: String, ColumnExpression {
        case key, sourceKey = "source_key", outputName = "output_name", state, attempts, fingerprint, outputPath = "output_path"
        case errorKind = "error_kind", errorMessage = "error_message", duration, runID = "run_id", updatedAt = "updated_at"
        case warning, failedSince = "failed_since"
        // v9: output facts
        case width, height, bytes, mediaType = "media_type", contentHash = "content_hash"
        // v16: quality choices
        case quality, qualityScore = "quality_score", qualityTarget = "quality_target", qualityEncodes = "quality_encodes"
        case qualityCapped = "quality_capped", qualityUnscorable = "quality_unscorable", qualityDefaultBytes = "quality_default_bytes"
    }

    /// A failed item with no kind is a value runner never writes, as an unknown kind is.
    package init(row: Row) throws {
        let state: ItemState = try row.stored(Columns.state, of: Self.self)
        let errorKind: ItemFailure.Kind? = try row.stored(Columns.errorKind, of: Self.self)
        if state == .failed && errorKind == nil {
            throw UnknownStoredValue(table: Self.databaseTableName, column: Columns.errorKind.name, value: .null)
        }
        self.init(key: row[Columns.key], sourceKey: row[Columns.sourceKey], outputName: row[Columns.outputName], state: state,
                  attempts: row[Columns.attempts], fingerprint: row[Columns.fingerprint], outputPath: row[Columns.outputPath],
                  errorKind: errorKind, errorMessage: row[Columns.errorMessage], warning: row[Columns.warning],
                  updatedAt: Date(timeIntervalSince1970: row[Columns.updatedAt]),
                  failedSince: (row[Columns.failedSince] as Double?).map(Date.init(timeIntervalSince1970:)),
                  width: row[Columns.width], height: row[Columns.height], bytes: row[Columns.bytes],
                  mediaType: row[Columns.mediaType], contentHash: row[Columns.contentHash], quality: Self.qualityOutcome(row))
    }

    /// The v16 columns of a done item whose output has a quality target; nil for any other.
    static func qualityOutcome(_ row: Row) -> QualityOutcome? {
        guard let quality = row[Columns.quality] as Int?, let target = row[Columns.qualityTarget] as Double? else { return nil }
        return QualityOutcome(quality: quality, score: row[Columns.qualityScore], target: target, encodes: row[Columns.qualityEncodes] ?? 1,
                              capped: row[Columns.qualityCapped] ?? false, unscorable: row[Columns.qualityUnscorable],
                              defaultBytes: row[Columns.qualityDefaultBytes])
    }
}

extension BlacklistEntry: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "blacklist"

    public enum Columns: String, ColumnExpression {
        case url, kind, httpStatus = "http_status", message, firstSeen = "first_seen", lastSeen = "last_seen", count
    }

    public init(row: Row) throws {
        self.init(url: row[Columns.url], kind: try row.stored(Columns.kind, of: Self.self), httpStatus: row[Columns.httpStatus],
                  message: row[Columns.message], firstSeen: Date(timeIntervalSince1970: row[Columns.firstSeen]),
                  lastSeen: Date(timeIntervalSince1970: row[Columns.lastSeen]), count: row[Columns.count])
    }

    // Written through its Codable conformance: each property in the column its name gives.
    public static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

/// Stored by its spelling (`rawValue`) in `blacklist.kind`.
extension BlacklistReason: DatabaseValueConvertible {}

extension CachedOriginal: FetchableRecord, PersistableRecord {
    package static let databaseTableName = "original"

    package enum Columns: String, ColumnExpression {
        case sourceKey = "source_key", url, file, etag, lastModified = "last_modified", contentHash = "content_hash", size
        case fetchedAt = "fetched_at", validatedAt = "validated_at", usedAt = "used_at"
        // v5: originals not revalidated (not in the record: a saved original replaces the row, clearing them)
        case revalidationError = "revalidation_error", revalidationFailedSince = "revalidation_failed_since"
    }

    package init(row: Row) {
        self.init(sourceKey: row[Columns.sourceKey], url: row[Columns.url], file: row[Columns.file],
                  etag: row[Columns.etag], lastModified: row[Columns.lastModified],
                  contentHash: row[Columns.contentHash], size: row[Columns.size], fetchedAt: row[Columns.fetchedAt],
                  validatedAt: row[Columns.validatedAt], usedAt: row[Columns.usedAt])
    }

    // Written through its Codable conformance, as `BlacklistEntry`.
    package static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
}

extension StoredSource: FetchableRecord, TableRecord {
    package static let databaseTableName = "source"

    package enum Columns: String, ColumnExpression {
        case key, location, fingerprint, bytes, width, height, format, contentHash = "content_hash", updatedAt = "updated_at"
    }

    package init(row: Row) {
        self.init(key: row[Columns.key], location: row[Columns.location] ?? row[Columns.key],
                  fingerprint: row[Columns.fingerprint],
                  bytes: row[Columns.bytes], width: row[Columns.width], height: row[Columns.height],
                  format: row[Columns.format], contentHash: row[Columns.contentHash],
                  updatedAt: Date(timeIntervalSince1970: row[Columns.updatedAt]))
    }
}

extension StoredDerivedValue: FetchableRecord, PersistableRecord {
    package static let databaseTableName = "derived"

    package enum Columns: String, ColumnExpression {
        case sourceKey = "source_key", identifier, name, fingerprint, value
    }

    package init(row: Row) {
        self.init(sourceKey: row[Columns.sourceKey], identifier: row[Columns.identifier], name: row[Columns.name],
                  fingerprint: row[Columns.fingerprint], json: row[Columns.value])
    }

    package func encode(to container: inout PersistenceContainer) {
        container[Columns.sourceKey] = sourceKey
        container[Columns.identifier] = identifier
        container[Columns.name] = name
        container[Columns.fingerprint] = fingerprint
        container[Columns.value] = json
    }
}

/// v11: shard plan (`SourceMemory`): the one row sealing the record, made under `inputs`.
struct ShardPlanSeal: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "shard_plan"
    var id = 1
    let inputs: String
}

/// v11: the shard's own sources, by `position` in the order it visited them.
extension SourceEntry: FetchableRecord, TableRecord {
    package static let databaseTableName = "shard_plan_source"

    package enum Columns: String, ColumnExpression {
        case position, spec, line
    }

    package init(row: Row) {
        self.init(spec: row[Columns.spec], line: row[Columns.line])
    }
}

/// v13: shard plan walks.
extension WalkedPath: FetchableRecord, TableRecord {
    package static let databaseTableName = "shard_plan_walked"

    package enum Columns: String, ColumnExpression {
        case position, path, seen
    }

    package init(row: Row) throws {
        self.init(path: row[Columns.path], seen: try row.stored(Columns.seen, of: Self.self))
    }
}

/// Stored as the identity's `description`, or one word.
extension WalkedPath.Seen: DatabaseValueConvertible {
    private static let words: [(String, WalkedPath.Seen)] = [("folder", .folder), ("other", .other), ("missing", .missing), ("absent", .absent)]

    package var databaseValue: DatabaseValue {
        if case .read(let identity) = self { return identity.description.databaseValue }
        return Self.words.first { $0.1 == self }?.0.databaseValue ?? .null
    }

    package static func fromDatabaseValue(_ value: DatabaseValue) -> WalkedPath.Seen? {
        guard let text = String.fromDatabaseValue(value) else { return nil }
        return Self.words.first { $0.0 == text }?.1 ?? FileIdentity(text).map(Self.read)
    }
}

/// v15: a file an item was recorded done at before it named another or none (a `{hash}` output's old
/// bytes, a moved output): a site deployed from the last manifest may still name it. `publishedAt`:
/// when the manifest that stops naming it went out.
package struct RetiredOutput: Codable, FetchableRecord, PersistableRecord, Sendable {
    package static let databaseTableName = "retired"
    /// The column names, which the record's coding uses too.
    package enum Columns: String, CodingKey, ColumnExpression {
        case path, itemKey = "item_key", retiredAt = "retired_at", publishedAt = "published_at"
    }
    typealias CodingKeys = Columns
    package let path: String
    package let itemKey: String
    package let retiredAt: Double
    package let publishedAt: Double?
}

/// v12: clean folders (`StateStore.cleanFolders`): a folder by its `FileIdentity.description`.
struct CleanFolder: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "clean_folder"
    let path: String
    let identity: String
}
