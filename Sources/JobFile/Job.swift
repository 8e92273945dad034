import Foundation
import Support
import Model
import Imaging
import ObjectStore

/// A job file, decoded once into a fully defaulted value (swift-format's `Configuration`).
/// Every relative path in it resolves against the job file's own folder, so cron can run it from anywhere.
public struct Job: Sendable {
    public static let supportedVersion = 1

    public let name: String
    /// The job file's absolute path and text; workers re-read the same text, never the file.
    public let filePath: String
    public let text: String
    public let baseDirectory: String
    package let sources: [SourceSpec]
    package let outputs: [OutputSpec]
    /// Values computed per source from its pixels (`derive`).
    package let derive: DerivedValues
    /// Where every run writes the site manifest (`manifest`); nil when the job has none.
    package let manifest: SiteManifestSettings?
    public let concurrency: ConcurrencySettings
    public let limits: Limits
    /// This run's state database: the job's own, or with a shard, the shard's (`JobStateLayout.path`).
    public internal(set) var statePath: String
    public let remote: RemoteSettings
    /// Where the state database is kept between runs, when not on this machine's disk alone.
    package var stateBucket: StateBucketSettings? = nil
    /// Seconds an output's replaced file stays after the manifest that stops naming it is published.
    package var keepReplaced: Double = 7 * 86_400
    /// The part of the job this run does (`--shard K/N`); nil for the whole job.
    public internal(set) var shard: Shard? = nil
    /// The job's state database without a shard: every shard's database sits beside it.
    public var jobStatePath: String { unshardedStatePath ?? statePath }
    package var unshardedStatePath: String? = nil

    /// The manifest file this run writes: the job's, or with a shard, the shard's part.
    package var manifestPath: String? { manifest?.path(for: shard) }

    public var outputNames: [String] { outputs.map(\.name) }

    /// Where outputs bound for a bucket wait, rendered, to be uploaded: beside the originals.
    package var uploadFolder: String { remote.cacheDirectory + "/uploads" }

    /// Every state database of the job as it is on disk now.
    public var stateLayout: JobStateLayout { JobStateLayout(jobStatePath: jobStatePath) }

    /// The same job restricted to `shard`, with the shard's own state database and lock.
    public func sharded(_ shard: Shard) -> Job {
        var part = self
        part.unshardedStatePath = jobStatePath
        part.statePath = JobStateLayout.path(for: shard, jobStatePath: jobStatePath)
        part.shard = shard
        return part
    }

    /// The job's own state path, and the state as a person finds it (that path, or the bucket
    /// object it is kept as): what reports are named after and written beside, and what they
    /// name, even while the state is read from copies elsewhere (`withState(in:)`).
    package private(set) var home: (path: String, shownAs: String)? = nil
    package var stateHomePath: String { home?.path ?? jobStatePath }
    public var stateShownAs: String { home?.shownAs ?? jobStatePath }

    /// The same job with its state databases in `folder` under their own names (the bucket's
    /// copies, fetched there), and no `stateBucket`: what reads and edits them sees only the copies.
    package func withState(in folder: String) -> Job {
        var moved = self
        moved.home = (jobStatePath, stateBucket.map { $0.object(for: jobStatePath).description } ?? jobStatePath)
        moved.statePath = folder + "/" + Paths.lastComponent(statePath)
        moved.unshardedStatePath = unshardedStatePath.map { folder + "/" + Paths.lastComponent($0) }
        moved.stateBucket = nil
        return moved
    }
}

/// Where images come from, as written in `sources`.
package enum SourceSpec: Sendable, Equatable {
    /// A file, or a folder walked for files matching `include` and not `exclude`.
    case path(String, recursive: Bool, include: [String], exclude: [String])
    /// A pattern with `*`, `?`, `[...]` and `**` (any number of folders).
    case glob(String)
    /// A text file naming one source per line (`#` starts a comment); lines may be URLs.
    case list(String)
    /// An HTTP(S) URL, with an optional explicit source key and headers of its own.
    case url(String, key: String?, headers: [String: String])
    /// The objects below a prefix of a bucket whose keys match `include` and not `exclude`.
    case bucket(S3Endpoint, bucket: String, prefix: String, include: [String], exclude: [String], retry: RetryPolicy)
}

package struct OutputSpec: Sendable {
    package let name: String
    /// Where the job file declares it (`outputs[2]`): a block's outputs share their block's.
    package let location: String
    /// The block of widths and formats it is one pair of (`widths`, `formats`); nil for an output of its own.
    package let set: OutputSetMember?
    package let template: PathTemplate
    package let chain: OperationChain
    package let encoder: any OutputEncoder
    /// Apply EXIF orientation while decoding (the default).
    package let autorotate: Bool
    package let metadata: MetadataPolicy
    package let colourSpace: ColourSpacePolicy
    /// Most frames an animated output may have; the job's `limits.frames` when not set here.
    package let frames: Int?
    /// Where it is published: a folder, or a bucket and how its objects are written.
    package let destination: any Destination

    /// Everything about how this output renders a source; part of each item's fingerprint. A block's
    /// next narrower width decides whether it is made (`sameBytes`), so it is part of it too: a width
    /// added or removed below redoes the one above it.
    package var recipe: String {
        "\(chain.identifier)=>\(encoder.identifier);autorotate:\(autorotate);metadata:\(metadata.identifier);colorspace:\(colourSpace.rawValue)"
            + (set?.narrower.map { ";narrower:\($0)" } ?? "") + destination.identifier
    }

    /// eleventy-img's rule for a block's widths (docs/JOB-FILE.md, Width and format blocks): a width
    /// above the source's is not made when a narrower width of its block already makes the source at
    /// its own width, since a thumbnail never enlarges and the two would be the same bytes. Returns
    /// the output among `outputs` that makes them (the narrowest such width, same block and format).
    package func sameBytes(in outputs: [OutputSpec], sourceWidth: Int) -> OutputSpec? {
        guard let set, let narrower = set.narrower, narrower >= sourceWidth else { return nil }
        return outputs.filter { $0.set?.block == set.block && $0.set?.formatIndex == set.formatIndex && $0.set?.width ?? 0 >= sourceWidth }
            .min { $0.set?.width ?? 0 < $1.set?.width ?? 0 }
    }
}

/// The job's `stateBucket`: the bucket folder each run's state database is kept in between runs.
package struct StateBucketSettings: Sendable {
    package let endpoint: S3Endpoint
    /// `s3://BUCKET/PREFIX/`, the prefix empty or ending in `/`.
    package let folder: ObjectURL
    /// Seconds between copies written while a run goes on.
    package let checkpoint: Double

    /// The object that keeps the database at `statePath`: its file name in the folder.
    package func object(for statePath: String) -> ObjectURL {
        ObjectURL(bucket: folder.bucket, key: folder.key + Paths.lastComponent(statePath))
    }
}

/// One output of a block of `widths` × `formats` (docs/JOB-FILE.md, Width and format blocks): which
/// block, which width and which format, for the site manifest's `sets`.
package struct OutputSetMember: Sendable, Equatable {
    /// The block's name, the `sets` key in the manifest.
    package let block: String
    /// The width its `thumbnail` fits inside; nil when the block gives no `widths`.
    package let width: Int?
    /// The block's widest width below `width`, if any.
    package let narrower: Int?
    /// The format's `type` (`avif`, `webp`, ...), as `{format}` and the output's name spell it.
    package let format: String
    /// The format's place in the block's `formats` (0 with `format`): the `<source>` order.
    package let formatIndex: Int
}

public struct ConcurrencySettings: Sendable {
    /// Image worker processes.
    public var process: Int
    /// libvips threads inside each worker.
    public let threadsPerImage: Int
    /// A worker is replaced after this many sources, so memory stays flat on long runs.
    public let recycleAfter: Int
}

public struct Limits: Sendable {
    /// Largest width x height accepted, checked from the header before any pixel is decoded.
    public let maxPixels: Int
    public let failOn: FailOn
    /// Keep libvips' untrusted loaders (ImageMagick and the like) blocked.
    public let blockUntrustedLoaders: Bool
    /// Most frames an animated output may have (a guard against frame bombs).
    public let frames: Int
    /// Most bytes one full decode may need, from the header; also sizes a worker's address space.
    public let maxMemory: Int
    /// Seconds a worker may spend on one source before it is killed and replaced.
    public let itemTimeout: Int

    /// The address space a worker may map: twice `maxMemory` (a decode and the rendered result
    /// beside it), 1 GiB for the worker itself, and 128 MiB per libvips thread (stack, malloc arena).
    package func workerAddressSpace(threadsPerImage: Int) -> Int {
        let (doubled, over) = maxMemory.multipliedReportingOverflow(by: 2)
        let room = (1 << 30) + threadsPerImage * (128 << 20)
        return over || doubled > Int.max - room ? Int.max : doubled + room
    }

    /// Every setting that can decide whether a source fails to decode or is too large. A failure
    /// its content decided stands only while these stay the same (raise `maxPixels` and it is retried).
    package var identifier: String {
        "maxPixels:\(maxPixels),failOn:\(failOn.rawValue),blockUntrusted:\(blockUntrustedLoaders),frames:\(frames),maxMemory:\(maxMemory)"
    }
}

