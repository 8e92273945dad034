import Foundation
import GRDB
import Support
import Model

/// One recorded item as a site manifest lists it (`SiteManifestWriter` in Reporting): what it is,
/// where it stands, and for a done one the facts of its output (`v9: output facts`); its source's
/// are the source's row (`StateStore.sourceRecords`).
package struct SiteManifestItem: Sendable {
    package let sourceKey: String
    package let outputName: String
    package let state: ItemState
    package let outputPath: String
    package let errorKind: String?
    package let errorMessage: String?
    package let warning: String?
    package let width: Int?, height: Int?, bytes: Int?
    package let mediaType: String?, contentHash: String?
    /// The URL a URL source was downloaded from (the originals cache), when it has been.
    package let url: String?
}

extension StateStore {
    /// Items in manifest order (source key, then output name, byte for byte), `limit` at a time
    /// after `after` (the last item of the previous page): the `item_source` index walked from
    /// where the page before stopped, so a million items stream in flat memory.
    package func siteManifestPage(after: (source: String, output: String)?, limit: Int = 1000) throws -> [SiteManifestItem] {
        try database.read { db in
            let columns = "item.*, original.url AS url"
            let from = "FROM item LEFT JOIN original ON original.source_key = item.source_key"
            let order = "ORDER BY item.source_key, item.output_name LIMIT ?"
            let items = if let after {
                try SiteManifestItem.fetchAll(db, sql: "SELECT \(columns) \(from) WHERE (item.source_key, item.output_name) > (?, ?) \(order)",
                                              arguments: [after.source, after.output, limit])
            } else {
                try SiteManifestItem.fetchAll(db, sql: "SELECT \(columns) \(from) \(order)", arguments: [limit])
            }
            // A reader's view of a killed run: its items still `running` go back to pending at the next run.
            guard ownerless else { return items }
            return items.map { $0.state == .running ? $0.with(state: .pending) : $0 }
        }
    }
}

extension SiteManifestItem {
    fileprivate func with(state: ItemState) -> SiteManifestItem {
        SiteManifestItem(sourceKey: sourceKey, outputName: outputName, state: state, outputPath: outputPath, errorKind: errorKind,
                         errorMessage: errorMessage, warning: warning, width: width, height: height, bytes: bytes,
                         mediaType: mediaType, contentHash: contentHash, url: url)
    }
}
