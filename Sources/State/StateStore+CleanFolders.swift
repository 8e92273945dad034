import Foundation
import GRDB

/// The output folders a run's sweep for temporary files found clean (`AtomicFile.sweep`), so the
/// next sweep skips those whose identity did not change since.
extension StateStore {
    /// Each folder recorded clean, with its identity (`FileIdentity.description`) when it was read.
    package func cleanFolders() throws -> [String: String] {
        try database.read { db in
            var folders: [String: String] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT path, identity FROM clean_folder")
            while let row = try rows.next() { folders[row[CleanFolderTable.path]] = row[CleanFolderTable.identity] }
            return folders
        }
    }

    /// Makes the record `folders`, given that it was `recorded`: only what changed is written, so
    /// an up-to-date rerun writes nothing, and a folder the job no longer writes into is forgotten.
    package func replaceCleanFolders(with folders: [String: String], recorded: [String: String]) throws {
        let dropped = recorded.keys.filter { folders[$0] == nil }
        let changed = folders.filter { recorded[$0.key] != $0.value }
        guard !dropped.isEmpty || !changed.isEmpty else { return }
        try database.write { db in
            let delete = try db.makeStatement(sql: "DELETE FROM clean_folder WHERE path = ?")
            for path in dropped { try delete.execute(arguments: [path]) }
            let upsert = try db.makeStatement(sql: "INSERT OR REPLACE INTO clean_folder (path, identity) VALUES (?, ?)")
            for (path, identity) in changed { try upsert.execute(arguments: [path, identity]) }
        }
    }
}
