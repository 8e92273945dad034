import Support
import Model
import Keys

/// How a site manifest is written: one JSON document, or JSON Lines (one source a line).
package enum SiteManifestFormat: String, CaseIterable, Sendable {
    case json, jsonl
}

/// The job's `manifest` key: where every run writes the manifest of the job's outputs (docs/JOB-FILE.md,
/// Site manifest). Not the job file, which the `Manifest` stage reads.
package struct SiteManifestSettings: Sendable, Equatable {
    /// Absolute and normal; inside the job file's folder or an output's folder.
    package let path: String
    package let format: SiteManifestFormat

    package init(path: String, format: SiteManifestFormat) {
        (self.path, self.format) = (path, format)
    }

    /// Where a run of `shard` writes its part (`images.shard-3-of-16.json`); the job's path without one.
    package func path(for shard: Shard?) -> String { shard?.partPath(of: path) ?? path }

    package enum Keys {
        package static let path = Key.text("path", .required,
            "The manifest file, relative to the job file; inside the job file's folder or an output's folder, and no output's path. "
                + "A shard writes its part beside it (images.shard-3-of-16.json).")
        package static let format = Key.choice("format", .defaults(SiteManifestFormat.json),
            "json: one document; jsonl: JSON Lines, one source object a line (streams at any size).")
    }

    package static let key = ObjectKey("manifest", .fixed(ObjectShape([Keys.path, Keys.format])),
        "Write a manifest of every source and output (sizes, types, content hashes, failures) at the end of every run, for a site build.")

    /// Reads `manifest` when the job has it. The path must stay inside the job file's folder or
    /// one of the outputs' folders (`roots`) and must not be the state database.
    static func read(_ root: ObjectReader, baseDirectory: String, roots: [String], statePath: String) throws -> SiteManifestSettings? {
        guard root.has(key) else { return nil }
        let section = try root.object(key)
        let written = try section.read(Keys.path)
        guard !written.utf8.contains(0) else { throw section.error(Keys.path, "must not contain a NUL character") }
        guard !written.hasSuffix("/") else { throw section.error(Keys.path, "must name a file, not a folder") }
        let path = Paths.resolve(written, against: baseDirectory)
        let allowed = [baseDirectory] + roots
        guard allowed.contains(where: { Paths.relative(path, to: $0).map { !$0.isEmpty } ?? false }) else {
            let folders = Array(Set(allowed)).sorted().joined(separator: ", ")
            throw section.error(Keys.path, "\(path) is outside the job: it must be inside the job file's folder or an output's folder (\(folders))")
        }
        guard path != statePath else { throw section.error(Keys.path, "is the state database's path") }
        let settings = SiteManifestSettings(path: path, format: try section.read(Keys.format))
        try section.finish()
        return settings
    }
}
