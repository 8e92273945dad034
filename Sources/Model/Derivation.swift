/// Which of a job's derived values one source needs computed, decided by planning against what the
/// state database holds: values are keyed by their identifier and `fingerprint`, the source's
/// content identity with the libvips version (`Classifier.derivationFingerprint`).
package struct PlannedDerivation: Sendable, Codable, Equatable {
    /// Indices into the job's `derive` list.
    package var values: [Int]
    package var fingerprint: String
    /// The source's exact content hash, when state already holds one for this content (a URL's
    /// cached original, or an earlier derivation); otherwise the worker hashes the file.
    package var contentHash: String?

    package init(values: [Int], fingerprint: String, contentHash: String?) {
        (self.values, self.fingerprint, self.contentHash) = (values, fingerprint, contentHash)
    }
}

/// The derived values a worker computed from one source.
package struct SourceDerivation: Sendable, Codable, Equatable {
    package struct Value: Sendable, Codable, Equatable {
        /// The derived value's name (`dhash`) and identifier (`dhash(bits:64,frame:100)`).
        package let name: String
        package let identifier: String
        /// The value as JSON text: a string, or the focal point's object.
        package let json: String

        package init(name: String, identifier: String, json: String) {
            (self.name, self.identifier, self.json) = (name, identifier, json)
        }
    }

    package var values: [Value]

    package init(values: [Value]) { self.values = values }
}

/// What a source is, as a worker found it: the `source` table's row (`v10: source facts`), which the
/// manifest, duplicates and the report read; its pixel size is the header's, in display orientation.
package struct SourceFacts: Sendable, Codable, Equatable {
    package let bytes: Int
    package let width: Int
    package let height: Int
    /// The loader's name without `load` (`jpeg`, `png`, `heif`, ...).
    package let format: String
    /// `StableHash.ofFile` of the file's bytes, as the downloader hashes originals; nil when neither
    /// `derive` nor `manifest` asked for it, or state holds it for this content already.
    package var contentHash: String?

    package init(bytes: Int, width: Int, height: Int, format: String, contentHash: String?) {
        (self.bytes, self.width, self.height, self.format, self.contentHash) = (bytes, width, height, format, contentHash)
    }
}

/// How a source's derivation ended in the worker: carried over its pipe like `ItemOutcome`.
package enum DerivationOutcome: Sendable, Codable, Equatable {
    case computed(SourceDerivation)
    case failed(ItemFailure)
}
