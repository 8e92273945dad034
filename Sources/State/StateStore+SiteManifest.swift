import Foundation
import GRDB
import Model

extension SiteManifestItem: FetchableRecord {
    package init(row: Row) throws { self.init(item: try ItemRecord(row: row), url: row[CachedOriginal.Columns.url]) }
}

extension StateStore {
    /// Items in manifest order (source key, then output name, byte for byte), `limit` at a time
    /// after `after` (the last item of the previous page): the `item_source` index walked from
    /// where the page before stopped, so a million items stream in flat memory.
    package func siteManifestPage(after: (source: String, output: String)?, limit: Int = 1000) throws -> [SiteManifestItem] {
        typealias Item = ItemRecord.Columns
        return try database.read { db in
            let columns = "item.*, original.\(CachedOriginal.Columns.url)"
            let from = "FROM item LEFT JOIN original ON original.\(CachedOriginal.Columns.sourceKey) = item.\(Item.sourceKey)"
            let order = "ORDER BY item.\(Item.sourceKey), item.\(Item.outputName) LIMIT ?"
            let items = if let after {
                try SiteManifestItem.fetchAll(db, sql: "SELECT \(columns) \(from) WHERE (item.\(Item.sourceKey), item.\(Item.outputName)) > (?, ?) \(order)",
                                              arguments: [after.source, after.output, limit])
            } else {
                try SiteManifestItem.fetchAll(db, sql: "SELECT \(columns) \(from) \(order)", arguments: [limit])
            }
            return items.map { var shown = $0; shown.item.state = self.shown($0.state); return shown }
        }
    }
}
