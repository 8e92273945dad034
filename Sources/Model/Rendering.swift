/// One output to render from a source: which of the job's outputs, and where it goes.
package struct OutputRequest: Sendable, Codable, Equatable {
    package let outputIndex: Int
    package let path: String

    package init(outputIndex: Int, path: String) {
        self.outputIndex = outputIndex
        self.path = path
    }
}

/// A rendered output, staged complete under a temporary name for the supervisor to publish.
public struct RenderedOutput: Sendable, Codable, Equatable {
    package let width: Int
    package let height: Int
    package let bytes: Int
    /// Where the output waits, complete but not yet durable, for the supervisor to publish it.
    package let temporary: String
    /// Something the item should say though it rendered (an ignored ICC profile).
    package let warning: String?
    /// The source's pixel size, from its header (a report's preview tells the size of the output it shows).
    package var sourceWidth: Int?, sourceHeight: Int?

    package init(width: Int, height: Int, bytes: Int, temporary: String, warning: String?) {
        (self.width, self.height, self.bytes, self.temporary, self.warning) = (width, height, bytes, temporary, warning)
    }
}
