import Foundation
import Synchronization
import Model

/// The supervisor's first message to a new worker.
package struct WorkerHello: Codable, Sendable {
    package let jobText: String
    package let jobFilePath: String
    package let threadsPerImage: Int
    /// Owns the outputs the worker stages.
    package let supervisorPID: Int32

    package init(jobText: String, jobFilePath: String, threadsPerImage: Int, supervisorPID: Int32) {
        (self.jobText, self.jobFilePath, self.threadsPerImage) = (jobText, jobFilePath, threadsPerImage)
        self.supervisorPID = supervisorPID
    }
}

/// One source and the outputs to render from it.
package struct WorkerTask: Codable, Sendable {
    /// Unique in the run; echoed in the reply.
    package let id: Int
    package let source: String
    package let requests: [OutputRequest]
    /// Indices into the job's `derive` list to compute, and whether to hash the file's bytes too.
    package let derive: [Int]
    package let hashContent: Bool

    private static let lastID = Atomic(0)

    package init(source: String, requests: [OutputRequest], derive: [Int] = [], hashContent: Bool = false) {
        id = Self.lastID.add(1, ordering: .relaxed).newValue
        (self.source, self.requests, self.derive, self.hashContent) = (source, requests, derive, hashContent)
    }
}

/// A worker's answer to one task: one outcome per request, in order.
package struct WorkerReply: Codable {
    package let id: Int
    package let outcomes: [ItemOutcome]
    /// libvips' distinct warnings while rendering the source, for `-v`.
    package let warnings: [String]
    /// What the source is, when an output rendered or a value was derived from it.
    package let source: SourceFacts?
    /// The derived values asked for, or why they could not be computed.
    package let derivation: DerivationOutcome?

    package init(id: Int, outcomes: [ItemOutcome], warnings: [String] = [], source: SourceFacts? = nil,
                 derivation: DerivationOutcome? = nil) {
        (self.id, self.outcomes, self.warnings, self.source, self.derivation) = (id, outcomes, warnings, source, derivation)
    }
}
