import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Output

/// The contact sheet's small images, one per output shown, beside the report (`thumbs-report-previews/`),
/// so a page of 500 tiles weighs a few MB rather than tens and a browser paints it whole. Named after
/// the output's path, size and modification time (made again only when it changes) and its pixel size,
/// which the tile shows (`HASH-1600x1067.webp`).
package final class SheetPreviews {
    /// For each (output file, preview path) the staged preview and the output's pixel size; nil when
    /// it could not be made (the tile then shows the output itself).
    package typealias Maker = ([(output: String, preview: String)]) -> [Made?]

    package struct Made {
        package let staged: AtomicFile.Staged
        package let width, height: Int

        package init(staged: AtomicFile.Staged, width: Int, height: Int) {
            (self.staged, self.width, self.height) = (staged, width, height)
        }
    }

    /// What a tile shows: its preview's file, relative to the report's folder, and the output's size.
    package struct Preview {
        package let href: String
        package let width, height: Int
    }

    package let folder: String
    private let maker: Maker
    /// Previews on disk, by the hash of what they show.
    private var existing: [String: String] = [:]
    private var used: Set<String> = []
    /// Made for this report, published with its pages.
    package private(set) var staged: [AtomicFile.Staged] = []

    /// Previews of the report whose first page is `reportPath`.
    package init(reportPath: String, maker: @escaping Maker) {
        let (stem, _) = Paths.splitExtension(Paths.lastComponent(reportPath))
        folder = Paths.directory(of: reportPath) + "/" + stem + "-previews"
        self.maker = maker
        for entry in Self.names(in: folder) {
            if let (hash, _, _) = Self.parse(entry) { existing[hash] = entry }
        }
    }

    /// The previews of a page's outputs (nil for one that is missing or could not be made), making
    /// those not on disk yet.
    package func previews(for outputs: [String?]) -> [Preview?] {
        let hashes = outputs.map { $0.flatMap(Self.hash(of:)) }
        var wanted: [(hash: String, output: String, preview: String)] = []
        var asked: Set<String> = []
        for (output, hash) in zip(outputs, hashes) {
            // A sampled sheet can show one output several times: one preview.
            guard let output, let hash, existing[hash] == nil, asked.insert(hash).inserted else { continue }
            wanted.append((hash, output, folder + "/" + hash + ".webp"))
        }
        for (request, made) in zip(wanted, maker(wanted.map { ($0.output, $0.preview) })) {
            guard let made else { continue }
            let name = "\(request.hash)-\(made.width)x\(made.height).webp"
            staged.append(AtomicFile.Staged(temporary: made.staged.temporary, path: folder + "/" + name))
            existing[request.hash] = name
        }
        return hashes.map { hash in
            guard let hash, let name = existing[hash], let (_, width, height) = Self.parse(name) else { return nil }
            used.insert(name)
            return Preview(href: Paths.lastComponent(folder) + "/" + name, width: width, height: height)
        }
    }

    /// Removes the previews no page of this report shows (their outputs changed, or left the sheet).
    package func removeUnused() {
        for name in Self.names(in: folder) where Self.parse(name) != nil && !used.contains(name) {
            unlink(folder + "/" + name)
        }
        AtomicFile.removeStaleTemporaries(in: [folder])
    }

    /// Drops what was made but not published (the report failed).
    package func discard() {
        for file in staged { unlink(file.temporary) }
    }

    /// The output as it is now: its path, size and modification time. nil when it is not a file.
    private static func hash(of output: String) -> String? {
        var info = stat()
        guard stat(output, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return StableHash.hex(output, String(info.st_size), String(info.st_mtim.tv_sec), String(info.st_mtim.tv_nsec))
    }

    private static func names(in folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    }

    /// `HASH-WxH.webp` as (hash, width, height).
    private static func parse(_ name: String) -> (String, Int, Int)? {
        guard name.hasSuffix(".webp"), let dash = name.firstIndex(of: "-") else { return nil }
        let size = name[name.index(after: dash)...].dropLast(5).split(separator: "x")
        guard size.count == 2, let width = Int(size[0]), let height = Int(size[1]) else { return nil }
        return (String(name[..<dash]), width, height)
    }
}
