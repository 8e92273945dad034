package import CSystem
import Foundation
import Support

/// Writes outputs so that no file under a final name is ever partial, in two steps.
///
/// A worker *stages* each output beside its destination as `.NAME.runner-tmp-OWNER-HOST`, unsynced.
/// The supervisor *publishes* a batch: one `syncfs` per filesystem, the renames, a second `syncfs`;
/// only then are the items recorded done: two journal commits per batch, not per file. A crash leaves
/// at most a dead owner's temporary files, which the next run removes.
package enum AtomicFile {
    package static let temporaryMarker = ".runner-tmp-"
    /// This machine in temporary names (a hash of its host name): shards on other machines write
    /// into the same folders on shared storage, and their process IDs mean nothing here.
    package static let hostTag: String = {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(StableHash.hex(host).prefix(8))
    }()
    /// How old another machine's temporary must be before a sweep here removes it: its owner
    /// cannot be asked whether it lives, and no output stays staged for a day.
    package static let foreignTemporaryAge: Double = 24 * 3600

    /// An output written under its temporary name, waiting to be published.
    package struct Staged: Sendable {
        package let temporary: String
        package let path: String

        package init(temporary: String, path: String) { (self.temporary, self.path) = (temporary, path) }
    }

    /// The name a file is written under beside `path` until it is complete: hidden, and naming
    /// `owner`, so `removeStaleTemporaries` can tell a dead run's leftovers from a live one's.
    package static func temporaryPath(for path: String, owner: pid_t) -> String {
        let name = Paths.lastComponent(path)
        let suffix = temporaryMarker + String(owner) + "-" + hostTag
        var hidden = "." + name
        // A name near NAME_MAX (255 bytes) would not fit with the suffix: it keeps what fits of
        // its start and a hash of the whole, so the temporary name is still its own.
        if hidden.utf8.count + suffix.utf8.count > 255 {
            let hash = "~" + StableHash.hex(name)
            var kept = ""
            for scalar in name.unicodeScalars {
                guard 1 + kept.utf8.count + String(scalar).utf8.count + hash.utf8.count + suffix.utf8.count <= 255 else { break }
                kept.unicodeScalars.append(scalar)
            }
            hidden = "." + kept + hash
        }
        // Beside it: in `/`, `/.name…`, not `//.name…`.
        let folder = Paths.directory(of: path)
        return (folder == "/" ? "" : folder) + "/" + hidden + suffix
    }

    /// Writes `data` beside `path` under a temporary name that names `owner`, the process that
    /// will publish it (while it lives, no other run removes the file).
    package static func stage(_ data: Data, for path: String, owner: pid_t) throws(ItemFailure) -> Staged {
        let folder = Paths.directory(of: path)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ItemFailure(.write, "cannot create \(folder): \(error.localizedDescription)")
        }
        let temporary = temporaryPath(for: path, owner: owner)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw systemFailure("cannot create \(temporary)") }
        let failure = data.withUnsafeBytes { FileDescriptor.writeAll(descriptor, $0) }
        let closed = close(descriptor) == 0 ? nil : errno
        if let failure = failure ?? closed {
            unlink(temporary)
            throw ItemFailure(.write, "\(path): \(String(cString: strerror(failure)))")
        }
        return Staged(temporary: temporary, path: path)
    }

    /// Writes one whole file (a report, a metrics file) so readers see the old one or the new one,
    /// never half of it.
    package static func write(_ data: Data, to path: String) throws(ItemFailure) {
        if let failure = publish([try stage(data, for: path, owner: getpid())])[0] { throw failure }
    }

    /// The longest note read back, 4 KiB: the notes runner writes beside a file it keeps (an ETag, a
    /// `FileIdentity`) are a few dozen bytes, so a longer one is not runner's.
    package static let longestNote = 4 << 10

    /// The note `write` left at `path`; nil when there is none, or none of runner's (too long, not UTF-8).
    package static func note(at path: String) -> String? {
        (try? FileDescriptor.readWhole(path, limit: longestNote)).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// Makes staged files durable under their final names; one result per file, in order.
    /// A file whose data or rename cannot be made durable fails alone and leaves nothing behind.
    package static func publish(_ batch: [Staged]) -> [ItemFailure?] {
        guard !batch.isEmpty else { return [] }
        var results = [ItemFailure?](repeating: nil, count: batch.count)
        let folders = Set(batch.map { Paths.directory(of: $0.path) })
        if !syncFilesystems(of: folders) {
            // Find out which files could not be written back (syncfs reports only that one could not).
            for (index, staged) in batch.enumerated() where !sync(staged.temporary) {
                results[index] = systemFailure("\(staged.path): cannot make it durable")
                unlink(staged.temporary)
            }
        }
        for (index, staged) in batch.enumerated() where results[index] == nil {
            if rename(staged.temporary, staged.path) != 0 {
                results[index] = systemFailure("cannot rename into \(staged.path)")
                unlink(staged.temporary)
            }
        }
        // The renames themselves must be durable before any item is recorded done.
        if !syncFilesystems(of: folders) {
            for (index, staged) in batch.enumerated() where results[index] == nil && !sync(Paths.directory(of: staged.path)) {
                results[index] = systemFailure("\(staged.path): cannot make the rename durable")
            }
        }
        return results
    }

    /// `syncfs` once per filesystem holding any of `folders`; false if any reported an error.
    private static func syncFilesystems(of folders: Set<String>) -> Bool {
        var synced: Set<UInt> = []
        var succeeded = true
        for folder in folders {
            let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else { succeeded = false; continue }
            defer { close(descriptor) }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { succeeded = false; continue }
            if synced.insert(UInt(info.st_dev)).inserted, syncfs(descriptor) != 0 { succeeded = false }
        }
        return succeeded
    }

    private static func sync(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return fsync(descriptor) == 0
    }

    private static func systemFailure(_ what: String) -> ItemFailure {
        ItemFailure(.write, "\(what): \(String(cString: strerror(errno)))")
    }

    /// A whole file written piece by piece (a manifest of a million items), published like `write`'s
    /// only if its bytes differ from the file at `path`, compared as they come: an unchanged file keeps
    /// its inode and modification time, and its folder too (a site watcher sees nothing). At the first
    /// difference the matched part is copied into a temporary beside it: memory stays at one buffer.
    package final class Streamed {
        package let path: String
        /// The file at `path` when writing began, while it still matches; runner replaces files by
        /// rename, never in place, so this descriptor keeps the bytes it was compared with.
        private var existing: Int32 = -1
        /// How many of its bytes the text written so far matched.
        private var matched: Int64 = 0
        private var temporary: String?
        private var descriptor: Int32 = -1
        private var buffer: [UInt8] = []
        private var scratch = [UInt8](repeating: 0, count: 1 << 16)

        package init(path: String) {
            self.path = path
            buffer.reserveCapacity(1 << 16)
            // Non-blocking: a FIFO put at the path must not hang the run; only a regular file is compared.
            let file = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            var info = stat()
            if file >= 0, fstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { existing = file } else if file >= 0 { close(file) }
        }

        deinit { discard() }

        package func write(_ text: String) throws(ItemFailure) {
            buffer.append(contentsOf: text.utf8)
            if buffer.count >= 1 << 16 { try flush() }
        }

        private func flush() throws(ItemFailure) {
            defer { buffer.removeAll(keepingCapacity: true) }
            if descriptor < 0 {
                if existing >= 0, continuesExisting() {
                    matched += Int64(buffer.count)
                    return
                }
                try stage()
            }
            if let failure = buffer.withUnsafeBytes({ FileDescriptor.writeAll(descriptor, $0) }) { throw discarding(failure) }
        }

        /// Whether the existing file holds `buffer` at `matched`, a scratch buffer at a time.
        private func continuesExisting() -> Bool {
            var offset = 0
            while offset < buffer.count {
                let count = min(scratch.count, buffer.count - offset)
                guard read(count, at: matched + Int64(offset)) == count,
                      scratch.withUnsafeBytes({ old in buffer.withUnsafeBytes { memcmp(old.baseAddress!, $0.baseAddress! + offset, count) } }) == 0
                else { return false }
                offset += count
            }
            return true
        }

        /// Reads up to `count` bytes of the existing file at `offset` into `scratch`; how many, nil on an error.
        private func read(_ count: Int, at offset: Int64) -> Int? {
            scratch.withUnsafeMutableBytes { FileDescriptor.readAll(existing, UnsafeMutableRawBufferPointer(rebasing: $0[..<count]), at: offset) }
        }

        /// Starts the temporary file with the part of the existing file that matched.
        private func stage() throws(ItemFailure) {
            let staged = try AtomicFile.stage(Data(), for: path, owner: getpid())
            temporary = staged.temporary
            descriptor = open(staged.temporary, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard descriptor >= 0 else { throw discarding(errno, "cannot open \(staged.temporary)") }
            var copied: Int64 = 0
            while copied < matched {
                let count = Int(min(Int64(scratch.count), matched - copied))
                // The old file is held open and never written in place: a short read is an I/O error.
                let failure: Int32? = read(count, at: copied) != count ? EIO
                    : scratch.withUnsafeBytes { FileDescriptor.writeAll(descriptor, UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                if let failure { throw discarding(failure) }
                copied += Int64(count)
            }
            if existing >= 0 { close(existing) }
            existing = -1
        }

        /// Publishes the file unless `path` already holds the same bytes; whether it was written.
        package func commit() throws(ItemFailure) -> Bool {
            try flush()
            // Every byte matched and the old file ends there: the same file, left alone.
            if descriptor < 0, existing >= 0, read(1, at: matched) == 0 {
                discard()
                return false
            }
            if descriptor < 0 { try stage() }
            close(descriptor)
            descriptor = -1
            guard let staged = temporary.map({ Staged(temporary: $0, path: path) }) else { return false }
            temporary = nil
            if let failure = publish([staged])[0] { throw failure }
            return true
        }

        /// Discards what was written, for a failure part way: the file, or `what`, with errno `number`'s reason.
        private func discarding(_ number: Int32, _ what: String? = nil) -> ItemFailure {
            discard()
            return ItemFailure(.write, "\(what ?? path): \(String(cString: strerror(number)))")
        }

        /// Removes the temporary file, if any (a failure part way).
        package func discard() {
            if existing >= 0 { close(existing) }
            if descriptor >= 0 { close(descriptor) }
            if let temporary { unlink(temporary) }
            (existing, descriptor, temporary) = (-1, -1, nil)
        }
    }
}
