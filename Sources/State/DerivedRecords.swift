import Foundation
import Support

/// A source as the state database knows it once a run rendered an output of it or derived a value
/// from it (`source`): the one record of what a source is.
package struct StoredSource: Sendable, Codable, Equatable {
    package let key: String
    /// The file path or URL.
    package let location: String
    /// The content its facts and values were taken from (`Classifier.derivationFingerprint`); empty for
    /// a row `v10: source facts` moved from a done item, whose content nothing recorded.
    package let fingerprint: String
    /// The file's size in bytes (0 in a row moved from an item, until the source renders again),
    /// and its pixel size in display orientation.
    package let bytes: Int
    package let width: Int
    package let height: Int
    /// libvips' loader's name for its format (`jpeg`, `png`, `webp`, `heif`, ...).
    package let format: String
    /// A hash of the file's bytes (`StableHash.contentHashes`, as the downloader hashes originals):
    /// equal for exact duplicates.
    package let contentHash: String?
    package let updatedAt: Date
}

/// One derived value of a source as stored (`derived`).
package struct StoredDerivedValue: Sendable, Codable, Equatable {
    package let sourceKey: String
    /// The value's identifier (`blurhash(x:4,y:3,frame:100)`), and its name in `derive` (`blurhash`).
    package let identifier: String
    package let name: String
    package let fingerprint: String
    /// The value as JSON text: a string, or the focal point's object.
    package let json: String

    /// The value parsed; nil only if the stored text is not JSON (it always is as runner writes it).
    package var value: JSONValue? { try? JSONValue(parsing: json) }
}

/// A source and its derived values computed from its current content: what `runner duplicates`,
/// the HTML report and a site manifest read.
package struct DerivedSourceRecord: Sendable, Equatable {
    package let source: StoredSource
    /// By identifier; values left from another content of the source (a `derive` entry removed
    /// since it changed) are left out.
    package let values: [String: StoredDerivedValue]

    /// The value of `identifier` (`DerivedValue.identifier`).
    package func value(_ identifier: String) -> JSONValue? { values[identifier]?.value }
}
