import Support
import Model
import Imaging

/// The JSON Schema (draft 2020-12) of the site manifest `SiteManifestWriter` writes:
/// `runner schema --manifest`. A JSON Lines manifest's every line is a `$defs/source`.
package enum SiteManifestSchema {
    private static let count: JSONValue = ["type": "integer", "minimum": 0]
    private static let string: JSONValue = ["type": "string"]

    private static let output: JSONValue = [
        "type": "object",
        "description": .string("One output of the source, by name. Every output has name and state, and path when it has a file (not a skipped "
            + "output, nor a {hash} output never made); a done one its file's facts "
            + "(absent only for items a runner before manifests rendered), a failed one its kind and reason, a blocked or skipped one its reason."),
        "required": ["name", "state"],
        "additionalProperties": false,
        "properties": [
            "name": ["type": "string", "description": "The output's name in the job file."],
            "state": ["enum": .array(ItemState.allCases.map { .string($0.rawValue) }),
                      "description": .string("done: the file is there; skipped: not made, a narrower output of its block holds its bytes (see reason; "
                        + "it is in no set); failed and blocked: see reason; pending: not made yet.")],
            "path": ["type": "string", "description": "The output file, relative to the manifest's folder (`/` separated)."],
            "width": count, "height": count,
            "bytes": ["type": "integer", "minimum": 0, "description": "The file's size."],
            "type": ["type": "string", "pattern": "^[a-z]+/[a-z0-9.+-]+$", "description": "The file's media type, as its bytes say (image/webp)."],
            "hash": ["type": "string", "pattern": "^[0-9a-f]{8}$",
                     "description": "The first 8 hex digits of FNV-1a 64 of the file's bytes: changes when the file does (cache busting)."],
            "warning": ["type": "string", "description": "What the item said though it rendered (an ignored ICC profile)."],
            "quality": ["type": "integer", "minimum": 1, "maximum": 100,
                        "description": "With a quality target: the quality the file was encoded at (the lowest that meets it)."],
            "score": ["type": "number", "description": .string("With a quality target: the file's SSIMULACRA2 score against the pixels the "
                + "encoder was given (2 decimals); absent when the image could not be scored and got the format's default.")],
            "kind": ["enum": .array(ItemFailure.Kind.allCases.map { .string($0.rawValue) }),
                     "description": "A failed item's failure kind."],
            "reason": ["type": "string", "description": .string("Why a failed item failed (the decoder's or system's message), why a blocked one "
                + "was not tried (both left out, as warning is, when sources are named by id: they may quote paths), or which output holds "
                + "a skipped one's bytes (`same bytes as hero-800-webp: the source is 800 px wide`).")],
        ],
    ]

    private static let source: JSONValue = [
        "type": "object",
        "description": .string("One source with its outputs. width, height, format and contentHash come from a rendered output, so a "
            + "source none of whose outputs is done has none."),
        "required": ["outputs"],
        "oneOf": [["required": ["key"]], ["required": ["id"]]],
        "additionalProperties": false,
        "properties": [
            "key": ["type": "string", "description": "The source key: a file's absolute path, a URL's normalized form or its explicit key."],
            "id": ["type": "string", "pattern": "^[0-9a-f]{12}$",
                   "description": "With manifest.sources id, instead of key, path and url: 12 hex digits of a hash of the key (the {key} token's value)."],
            "path": ["type": "string", "description": "A local source's absolute path."],
            "url": ["type": "string", "description": "A URL source's URL."],
            "width": count, "height": count,
            "format": ["type": "string", "description": "The format libvips read it as (jpeg, png, webp, gif, tiff, avif, heif, svg, jxl, ...)."],
            "contentHash": ["type": "string", "pattern": "^[0-9a-f]{16}$", "description": "FNV-1a 64 of the source file's bytes, 16 hex digits."],
            "outputs": ["type": "array", "items": ["$ref": "#/$defs/output"], "description": "By output name."],
            "sets": ["type": "object", "additionalProperties": ["type": "array", "minItems": 1, "items": ["$ref": "#/$defs/setFormat"]],
                     "description": .string("The done outputs of each block of widths and formats, by the block's name: one entry per format "
                        + "in the block's order (a <picture>'s <source> order), each with its images by width (a srcset). "
                        + "Absent when no output of a block is done.")],
            "derived": ["type": "object", "description": "Values computed from the pixels (`derive`), by name.", "additionalProperties": false,
                        "properties": .object(Dictionary(uniqueKeysWithValues: derivedValueCatalogue.map { ($0.name, $0.valueSchema) }))],
        ],
    ]

    private static let setFormat: JSONValue = [
        "type": "object",
        "description": "One format of a block: a <source type> and its srcset.",
        "required": ["format", "images"],
        "additionalProperties": false,
        "properties": [
            "format": ["type": "string", "description": "The format's type in the job file (avif, webp, jpeg, png, tiff, gif, auto)."],
            "type": ["type": "string", "pattern": "^[a-z]+/[a-z0-9.+-]+$", "description": "The images' media type, as their bytes say (image/avif)."],
            "images": ["type": "array", "minItems": 1, "items": ["$ref": "#/$defs/setImage"],
                       "description": "The done outputs of this format, by width (then height and path): one srcset candidate each."],
        ],
    ]

    private static let setImage: JSONValue = [
        "type": "object",
        "description": "One output of a block: the same file, width, height, bytes and hash as its entry in outputs.",
        "required": ["path", "width", "height", "bytes"],
        "additionalProperties": false,
        "properties": [
            "path": ["type": "string", "description": "The output file, relative to the manifest's folder (`/` separated)."],
            "width": count, "height": count,
            "bytes": ["type": "integer", "minimum": 0, "description": "The file's size."],
            "hash": ["type": "string", "pattern": "^[0-9a-f]{8}$", "description": "As the output's hash: changes when the file does."],
        ],
    ]

    package static var document: JSONValue {
        [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": .string("runner site manifest, version \(SiteManifestWriter.version)"),
            "description": .string("Every source of a job and its outputs, written by a run with the job's `manifest` key or by `runner manifest`. "
                + "Sources are ordered by key, outputs by name (byte order); a JSON Lines manifest holds one source object a line."),
            "type": "object",
            "required": ["manifestVersion", "job", "sources"],
            "additionalProperties": false,
            "properties": [
                "manifestVersion": ["const": .number(Double(SiteManifestWriter.version))],
                "job": ["type": "string", "description": "The job's name."],
                "shard": ["type": "string", "pattern": "^[0-9]+/[0-9]+$", "description": "The shard whose part this is (K/N)."],
                "sources": ["type": "array", "items": ["$ref": "#/$defs/source"]],
            ],
            "$defs": ["source": source, "output": output, "setFormat": setFormat, "setImage": setImage],
        ]
    }

    /// As `runner schema --manifest` prints it: indented, keys sorted.
    package static var text: String { document.formatted() }
}
