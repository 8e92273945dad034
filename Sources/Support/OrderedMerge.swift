/// Streams each already in one order, read as one stream in that order (a k-way merge): a binary
/// heap on their heads, one comparison per level for each element, so k streams hold k elements
/// in memory however long they are. Of equal heads the earlier stream's comes first.
package struct OrderedMerge<Element> {
    private let streams: [() throws -> Element?]
    private var heads: [Element?]
    private var heap: [Int] = []
    private let precedes: (Element, Element) -> Bool

    package init(_ streams: [() throws -> Element?], precedes: @escaping (Element, Element) -> Bool) throws {
        (self.streams, self.precedes) = (streams, precedes)
        heads = try streams.map { try $0() }
        for stream in heads.indices where heads[stream] != nil {
            heap.append(stream)
            var child = heap.count - 1
            while child > 0, before(heap[child], heap[(child - 1) / 2]) {
                heap.swapAt(child, (child - 1) / 2)
                child = (child - 1) / 2
            }
        }
    }

    /// The next element in order, with the index of the stream it came from.
    package mutating func next() throws -> (element: Element, stream: Int)? {
        guard let stream = heap.first, let element = heads[stream] else { return nil }
        heads[stream] = try streams[stream]()
        if heads[stream] == nil {
            heap.swapAt(0, heap.count - 1)
            heap.removeLast()
        }
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, before(heap[left], heap[first]) { first = left }
            if right < heap.count, before(heap[right], heap[first]) { first = right }
            guard first != parent else { return (element, stream) }
            heap.swapAt(parent, first)
            parent = first
        }
    }

    private func before(_ a: Int, _ b: Int) -> Bool {
        precedes(heads[a]!, heads[b]!) || (a < b && !precedes(heads[b]!, heads[a]!))
    }
}

/// SQLite's order of text (BINARY: the UTF-8 bytes), which Swift's `<` on strings is not.
package func bytewise(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

/// SQLite's order of two columns of text, `ORDER BY a, b`.
package func bytewise(_ a: (String, String), _ b: (String, String)) -> Bool {
    a.0.utf8.elementsEqual(b.0.utf8) ? bytewise(a.1, b.1) : bytewise(a.0, b.0)
}
