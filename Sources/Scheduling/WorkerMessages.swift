import Foundation
import Synchronization
import Model
import Manifest

/// The supervisor's first message to a new worker.
package struct WorkerHello: Codable, Sendable {
    package let jobText: String
    package let jobFilePath: String
    package let threadsPerImage: Int
    /// Owns the outputs the worker stages.
    package let supervisorPID: Int32

    package init(jobText: String, jobFilePath: String, threadsPerImage: Int, supervisorPID: Int32) {
        self.jobText = jobText
        self.jobFilePath = jobFilePath
        self.threadsPerImage = threadsPerImage
        self.supervisorPID = supervisorPID
    }
}

/// One source and the outputs to render from it.
package struct WorkerTask: Codable, Sendable {
    /// Unique in the run; echoed in the reply.
    package let id: Int
    package let source: String
    package let requests: [OutputRequest]

    private static let lastID = Atomic(0)

    package init(source: String, requests: [OutputRequest]) {
        id = Self.lastID.add(1, ordering: .relaxed).newValue
        self.source = source
        self.requests = requests
    }
}

/// A worker's answer to one task: one outcome per request, in order.
package struct WorkerReply: Codable {
    package let id: Int
    package let outcomes: [ItemOutcome]
    /// libvips' distinct warnings while rendering the source, for `-v`.
    package let warnings: [String]

    package init(id: Int, outcomes: [ItemOutcome], warnings: [String] = []) {
        self.id = id
        self.outcomes = outcomes
        self.warnings = warnings
    }
}
