import Foundation
import Support
import Model
import Planning

/// The sweep for temporaries a dead process left beside outputs: it reads folders as planning
/// does (`SourceDiscovery.hiddenEntries`), so it lives here, apart from the staging a worker does.
extension AtomicFile {
    /// What a sweep (`sweep`) did.
    package struct Sweep: Sendable {
        package var removed = 0
        /// Folders whose names were read, and folders skipped as still clean.
        package var read = 0
        package var skipped = 0
        /// Every folder known to hold no temporary file now, with the identity
        /// (`FileIdentity.description`) it had before it was read: the next sweep's `knownClean`.
        package var clean: [String: String] = [:]
    }

    /// Removes temporary files left in `folders` by processes that no longer exist: this machine's
    /// whose process is gone (and those named before names carried the machine), another machine's
    /// once older than `foreignTemporaryAge`. A folder whose identity is the one `knownClean` holds
    /// for it had no entry added since it held no temporary file, so it is not read: reading every
    /// name of 10,000 folders of 1,000 files cost 1.9 s of CPU.
    package static func sweep(_ folders: Set<String>, knownClean: [String: String],
                              now: Double = Date().timeIntervalSince1970) -> Sweep {
        var sweep = Sweep()
        for folder in folders {
            // Taken before the read: an entry added during it changes the identity, so the next sweep reads again.
            guard let identity = FileIdentity(path: folder) else { continue }
            let described = identity.description
            if knownClean[folder] == described {
                sweep.skipped += 1
                sweep.clean[folder] = described
                continue
            }
            sweep.read += 1
            let (removed, left) = removeStaleTemporaries(in: folder, now: now)
            sweep.removed += removed
            // A folder changed within the racy window could change again within the same timestamp tick.
            if left == 0, FileIdentity.settled(identity.latestChange, before: now) { sweep.clean[folder] = described }
        }
        return sweep
    }

    /// `sweep` reading every folder.
    @discardableResult
    package static func removeStaleTemporaries(in folders: Set<String>, now: Double = Date().timeIntervalSince1970) -> Int {
        sweep(folders, knownClean: [:], now: now).removed
    }

    /// The temporary files removed from `folder`, and how many are left (live, or another machine's young ones).
    private static func removeStaleTemporaries(in folder: String, now: Double) -> (removed: Int, left: Int) {
        var removed = 0, left = 0
        for entry in SourceDiscovery.hiddenEntries(folder) where !entry.isDirectory {
            guard let marker = entry.name.range(of: temporaryMarker, options: .backwards) else { continue }
            let owner = entry.name[marker.upperBound...].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard let pid = pid_t(owner[0]) else { continue }
            let path = folder + "/" + entry.name
            let stale = owner.count == 1 || owner[1] == hostTag
                ? kill(pid, 0) != 0 && errno == ESRCH
                : modified(path).map { now - $0 > foreignTemporaryAge } ?? false
            if stale, unlink(path) == 0 { removed += 1 } else { left += 1 }
        }
        return (removed, left)
    }

    private static func modified(_ path: String) -> Double? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }
}
