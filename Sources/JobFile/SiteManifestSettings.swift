import Support
import Model
import Keys

/// How a site manifest is written: one JSON document, or JSON Lines (one source a line).
package enum SiteManifestFormat: String, CaseIterable, Sendable {
    case json, jsonl
}

/// How the manifest names each source: by its key and its path or URL (for the site's own build),
/// or by an opaque id alone (for a manifest published with the site: no server layout in it).
package enum SourceNaming: String, CaseIterable, Sendable {
    case path, id
}

/// The job's `manifest` key: where every run writes the manifest of the job's outputs (docs/JOB-FILE.md,
/// Site manifest). Not the job file, which the `JobFile` stage reads.
package struct SiteManifestSettings: Sendable, Equatable {
    /// Absolute and normal; anywhere but the job file, the state database, an output's path or folder.
    package let path: String
    package let format: SiteManifestFormat
    package let naming: SourceNaming

    /// Where a run of `shard` writes its part (`images.shard-3-of-16.json`); the job's path without one.
    package func path(for shard: Shard?) -> String { shard?.partPath(of: path) ?? path }

    package enum Keys {
        package static let path = Key.text("path", .required,
            "The manifest file, relative to the job file (its folder is made if missing); not the job file, the state database, an output's path or a folder outputs are written into. "
                + "A shard writes its part beside it (images.shard-3-of-16.json).")
        package static let format = Key.choice("format", .defaults(SiteManifestFormat.json),
            "json: one document; jsonl: JSON Lines, one source object a line (streams at any size).")
        package static let sources = Key.choice("sources", .defaults(SourceNaming.path),
            "path: each source by its key and its path or URL; id: by an opaque id alone (the {key} token's value), "
                + "with no path or URL in failure reasons either: for a manifest published with the site.")
    }

    package static let key = ObjectKey("manifest", .fixed(ObjectShape([Keys.path, Keys.format, Keys.sources])),
        "Write a manifest of every source and output (sizes, types, content hashes, failures) at the end of every run, for a site build.")

    /// Reads `manifest` when the job has it. Its path is fixed in the job, so it may be anywhere, but
    /// not in place of the job file, the state database or a folder an output writes into (`roots`,
    /// with where the job declares each); an output's own path is checked as the job is planned.
    static func read(_ root: ObjectReader, jobFile: String, baseDirectory: String, roots: [(location: String, root: String)], statePath: String) throws -> SiteManifestSettings? {
        guard root.has(key) else { return nil }
        let section = try root.object(key)
        let written = try section.read(Keys.path)
        guard !written.utf8.contains(0) else { throw section.error(Keys.path, "must not contain a NUL character") }
        guard !written.hasSuffix("/"), !["", ".", ".."].contains(Paths.lastComponent(written)) else {
            throw section.error(Keys.path, "must name a file, not a folder")
        }
        let path = ObjectURL(written) == nil ? Paths.resolve(written, against: baseDirectory) : written
        if let object = ObjectURL(written) {
            guard !object.key.isEmpty, roots.contains(where: { ObjectURL($0.root)?.bucket == object.bucket }) else {
                throw section.error(Keys.path, "an s3:// manifest is written with the store of the outputs in its bucket: "
                                    + "no output writes to s3://\(object.bucket)/")
            }
        } else {
            // A folder above the job file or the state database could not be replaced by a file either.
            for (taken, message) in [(Paths.normalize(jobFile), "is the job file"), (statePath, "is the state database's path")] {
                guard let below = Paths.relative(taken, to: path) else { continue }
                throw section.error(Keys.path, below.isEmpty ? message : "\(path) is a folder that holds \(taken)")
            }
            if let taken = roots.first(where: { Paths.relative($0.root, to: path) != nil }) {
                throw section.error(Keys.path, "\(path) is a folder \(taken.location) writes into (\(taken.root))")
            }
        }
        let settings = SiteManifestSettings(path: path, format: try section.read(Keys.format), naming: try section.read(Keys.sources))
        try section.finish()
        return settings
    }
}
