import Foundation
import GRDB

/// The output folders a run's sweep for temporary files found clean (`AtomicFile.sweep`), so the
/// next sweep skips those whose identity did not change since.
extension StateStore {
    /// Each folder recorded clean, with its identity (`FileIdentity.description`) when it was read.
    package func cleanFolders() throws -> [String: String] {
        try database.read { db in try Dictionary(uniqueKeysWithValues: CleanFolder.fetchCursor(db).map { ($0.path, $0.identity) }) }
    }

    /// Makes the record `folders`, given that it was `recorded`: only what changed is written, so
    /// an up-to-date rerun writes nothing, and a folder the job no longer writes into is forgotten.
    package func replaceCleanFolders(with folders: [String: String], recorded: [String: String]) throws {
        let dropped = recorded.keys.filter { folders[$0] == nil }
        let changed = folders.filter { recorded[$0.key] != $0.value }
        guard !dropped.isEmpty || !changed.isEmpty else { return }
        try database.write { db in
            for path in dropped { try CleanFolder.deleteOne(db, key: path) }
            for (path, identity) in changed { try CleanFolder(path: path, identity: identity).insert(db, onConflict: .replace) }
        }
    }
}
