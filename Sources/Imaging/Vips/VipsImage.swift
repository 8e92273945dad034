package import CVips
import Foundation
import Synchronization

/// The one Swift owner of a `VipsImage*`: `deinit` drops the reference it took. libvips reads buffer-backed
/// images lazily and never copies the buffer, so every image derived from one keeps the source bytes (`Data`'s
/// one shared storage) alive through `retainedSource`.
package final class VipsImageHandle {
    package let pointer: UnsafeMutablePointer<VipsImage>
    private let retainedSource: Data?

    /// Takes ownership of a reference returned by a libvips call.
    package init(taking pointer: UnsafeMutablePointer<VipsImage>, retaining source: Data?) {
        (self.pointer, self.retainedSource) = (pointer, source)
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(pointer)) }

    package var width: Int { Int(vips_image_get_width(pointer)) }
    package var height: Int { Int(vips_image_get_height(pointer)) }
    package var bands: Int { Int(vips_image_get_bands(pointer)) }
    package var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }
    package var interpretation: VipsInterpretation { vips_image_get_interpretation(pointer) }
    package var bandFormat: VipsBandFormat { vips_image_get_format(pointer) }
    package var hasICCProfile: Bool { cvips_image_has(pointer, "icc-profile-data") != 0 }

    /// The size of an embedded ICC profile libvips cannot use for these pixels (damaged, or made
    /// for another colour space); nil when there is none or it is usable.
    package var unusableICCProfileBytes: Int? {
        var data: UnsafeRawPointer?
        var length = 0
        guard hasICCProfile, vips_image_get_blob(pointer, "icc-profile-data", &data, &length) == 0 else { return nil }
        // lcms reports a damaged profile through libvips' error buffer; that is an answer, not a failure.
        defer { vips_error_clear() }
        return vips_icc_is_compatible_profile(pointer, data, length) == 0 ? length : nil
    }

    package func int(_ name: String) -> Int? {
        var value: Int32 = 0
        guard cvips_image_has(pointer, name) != 0, vips_image_get_int(pointer, name, &value) == 0 else { return nil }
        return Int(value)
    }

    package func string(_ name: String) -> String? {
        var value: UnsafePointer<CChar>?
        guard cvips_image_has(pointer, name) != 0, vips_image_get_string(pointer, name, &value) == 0, let value else { return nil }
        return String(cString: value)
    }

    package var fieldNames: [String] {
        guard let fields = vips_image_get_fields(pointer) else { return [] }
        defer { g_strfreev(fields) }
        return sequence(first: fields) { $0 + 1 }.prefix { $0.pointee != nil }.map { String(cString: $0.pointee!) }
    }

    /// EXIF orientation 1...8 (1 when absent).
    package var orientation: Int { int("orientation").flatMap { (1...8).contains($0) ? $0 : nil } ?? 1 }

    /// Runs one libvips operation that produces a new image from this one.
    package func derive(
        _ operation: String,
        _ call: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32
    ) throws(VipsError) -> VipsImageHandle {
        var output: UnsafeMutablePointer<VipsImage>?
        guard call(pointer, &output) == 0, let output else { throw VipsError.capture(operation) }
        return VipsImageHandle(taking: output, retaining: retainedSource)
    }

    /// `bytes` (a whole image file) decoded into memory, so the result does not read the bytes.
    package static func decoding(_ bytes: Data, operation: String) throws(VipsError) -> VipsImageHandle {
        let pointer = bytes.withUnsafeBytes { cvips_new_from_buffer($0.baseAddress, $0.count, VIPS_ACCESS_RANDOM, VIPS_FAIL_ON_ERROR) }
        guard let pointer else { throw VipsError.capture(operation) }
        return try VipsImageHandle(taking: pointer, retaining: bytes).copiedToMemory()
    }

    /// Stacks `frames` top to bottom into one strip (an animation's pages). The frames come
    /// from one source, whose bytes the strip keeps alive.
    package static func stacking(_ frames: [VipsImageHandle]) throws(VipsError) -> VipsImageHandle {
        var pointers: [UnsafeMutablePointer<VipsImage>?] = frames.map(\.pointer)
        var output: UnsafeMutablePointer<VipsImage>?
        guard cvips_arrayjoin_vertical(&pointers, &output, Int32(pointers.count)) == 0, let output else {
            throw VipsError.capture("arrayjoin")
        }
        return VipsImageHandle(taking: output, retaining: frames.first?.retainedSource)
    }

    /// Decodes every pixel into memory so several chains can read it without decoding again. With one libvips
    /// thread per image the render runs here, strip by strip: `vips_image_copy_memory` would hand every strip
    /// to a pool thread and wait for it, a thread round trip per strip that buys no parallelism (about 0.5 ms
    /// of a 9 ms thumbnail). The caller's thread should be a libvips one (`VipsRuntime.onLibvipsThread`), or
    /// every strip allocates fresh region buffers.
    package func copiedToMemory() throws(VipsError) -> VipsImageHandle {
        guard vips_concurrency_get() == 1 else {
            guard let copy = vips_image_copy_memory(pointer) else { throw VipsError.capture("copy_memory") }
            return VipsImageHandle(taking: copy, retaining: nil)
        }
        guard let memory = vips_image_new_memory() else { throw VipsError.capture("copy_memory") }
        let copy = VipsImageHandle(taking: memory, retaining: nil)
        // The copy takes this image's header and metadata, then a buffer of its own.
        guard cvips_pipeline_from(memory, pointer) == 0, vips_image_write_prepare(memory) == 0,
              let region = vips_region_new(pointer) else { throw VipsError.capture("copy_memory") }
        defer { g_object_unref(UnsafeMutableRawPointer(region)) }
        var tileWidth: Int32 = 0, tileHeight: Int32 = 0, stripHeight: Int32 = 0
        vips_get_tile_size(pointer, &tileWidth, &tileHeight, &stripHeight)
        let width = Int32(width), height = Int32(height), lineBytes = cvips_sizeof_line(pointer)
        var top: Int32 = 0
        while top < height {
            var strip = VipsRect(left: 0, top: top, width: width, height: min(max(stripHeight, 1), height - top))
            guard vips_region_prepare(region, &strip) == 0 else { throw VipsError.capture("copy_memory") }
            for y in top..<top + strip.height {
                memcpy(cvips_image_addr(memory, 0, y), cvips_region_addr(region, 0, y), lineBytes)
            }
            top += strip.height
        }
        return copy
    }

    /// Encodes with a libvips `*save_buffer` call and hands back the bytes.
    package func encode(
        _ saver: String,
        _ call: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws(VipsError) -> Data {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard call(pointer, &buffer, &length) == 0, let buffer else { throw VipsError.capture(saver) }
        return Data(bytesNoCopy: buffer, count: length, deallocator: .custom { pointer, _ in g_free(pointer) })
    }
}

/// The one Swift owner of a source file's `VipsSource`: opened once, read by every decode of it.
package final class VipsSourceHandle {
    package let pointer: UnsafeMutablePointer<VipsSource>

    /// `byName` keeps the file name for libvips' sniff. Without it the sniff runs only the loaders
    /// that test the first bytes and skips those that can only test a name, each of which opens
    /// the file again (OpenSlide opens every file as an SQLite database): 178 of a tiny JPEG's 324
    /// syscalls, 5% of its instructions. The name-only loaders are all untrusted ones.
    package init(path: String, byName: Bool) throws(VipsError) {
        if byName {
            guard let pointer = cvips_source(path) else { throw VipsError.capture("source") }
            self.pointer = pointer
            return
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw VipsError(operation: "source", message: "\(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard let pointer = cvips_source_descriptor(descriptor) else { throw VipsError.capture("source") }
        self.pointer = pointer
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(pointer)) }
}

/// A libvips failure with the message libvips gave for it.
package struct VipsError: Error, CustomStringConvertible {
    package let operation: String
    package let message: String

    package init(operation: String, message: String) { (self.operation, self.message) = (operation, message) }

    /// Reads and clears libvips' error buffer right after the failing call.
    /// Each worker process runs one image at a time, so the buffer holds only this call's text.
    package static func capture(_ operation: String) -> VipsError {
        var message = ""
        if let raw = cvips_error_take() {
            message = String(cString: raw)
            g_free(raw)
        }
        // Some loaders complain only in warnings and leave the buffer empty (libpng's IHDR checks).
        if message.isEmpty { message = VipsWarnings.take().joined(separator: "\n") }
        let text = distinctLines(message)
        return VipsError(operation: operation, message: text.isEmpty ? "\(operation) failed" : text)
    }

    package var description: String { message }

    /// Each distinct line of `text` once, trimmed, joined with "; ": lcms, for one, reports the same
    /// damage on every read of a profile, and libvips' "read gave 1 warnings" repeats the decoder's words.
    static func distinctLines(_ text: String) -> String {
        var seen: Set<String> = []
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.filter { !$0.isEmpty && seen.insert($0).inserted }.joined(separator: "; ")
    }

    /// Forgets what libvips said so far (its error buffer and warnings): calls that succeed leave
    /// text there too (lcms does), and it is not about the next source or output.
    package static func clearMessages() {
        vips_error_clear()
        VipsWarnings.clear()
    }
}

/// libvips reports some decoders' complaints only as GLib warnings (`VIPS-WARNING`), then fails
/// with an empty error buffer: libpng's "Invalid IHDR data" came out as "load failed". A worker
/// keeps the latest warnings so such a failure can still say why, and each distinct one of the
/// source at hand for its reply, which the run shows with `-v` (timed like its other lines, each
/// once: a damaged tile warns on every read, as `error in tile 0 x 1504`, `… 0 x 1512`, so
/// warnings that differ only in their numbers are one, with a count). None goes to the worker's stderr.
package enum VipsWarnings {
    private static let recent = Mutex<[String]>([])
    /// The source's warnings by shape (digits left out): the first of each shape, and how many others
    /// of that shape came (the same text again, once per output decoded, is not another).
    private static let ofSource = Mutex<(warnings: [(first: String, more: Int)], byShape: [String: Int], seen: Set<String>)>(([], [:], []))
    /// Distinct warnings one source may report: a decoder that warns per scanline cannot flood the reply.
    private static let mostPerSource = 32

    static func install() {
        _ = g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, { _, _, message, _ in
            if let message { VipsWarnings.keep(String(cString: message)) }
        }, nil)
    }

    private static func keep(_ line: String) {
        recent.withLock { lines in
            lines.append(line)
            if lines.count > 16 { lines.removeFirst() }
        }
        let oneLine = VipsError.distinctLines(line)
        guard !oneLine.isEmpty else { return }
        let shape = String(oneLine.unicodeScalars.filter { !("0"..."9").contains($0) })
        ofSource.withLock { source in
            guard source.seen.insert(oneLine).inserted else { return }
            if let seen = source.byShape[shape] {
                source.warnings[seen].more += 1
            } else if source.warnings.count < mostPerSource {
                source.byShape[shape] = source.warnings.count
                source.warnings.append((oneLine, 0))
            }
        }
    }

    /// Forgets the warnings of the source before.
    package static func startSource() { ofSource.withLock { $0 = ([], [:], []) } }

    /// Each distinct warning since `startSource`, in the order they came, with how many more like it.
    package static func ofCurrentSource() -> [String] {
        ofSource.withLock { source in
            source.warnings.map { $0.more == 0 ? $0.first : "\($0.first) (and \($0.more) more like it)" }
        }
    }

    static func clear() { recent.withLock { $0.removeAll() } }

    static func take() -> [String] { recent.withLock { exchange(&$0, with: []) } }
}

/// Process-wide libvips set-up for a batch worker.
package enum VipsRuntime {
    /// Called once per process, before any other libvips call.
    package static func start(threadsPerImage: Int, blockUntrusted: Bool) throws {
        guard cvips_init("runner") == 0 else { throw VipsError.capture("vips_init") }
        // The operation cache only helps when the same image is processed again; a batch never does.
        vips_cache_set_max(0)
        vips_cache_set_max_mem(0)
        vips_cache_set_max_files(0)
        // Parallelism comes from runner's worker processes; threads per image are sized with them.
        vips_concurrency_set(Int32(threadsPerImage))
        // Loaders libvips marks untrusted (ImageMagick, and others fed by external code) stay off.
        vips_block_untrusted_set(blockUntrusted ? 1 : 0)
        // libvips marks jxlsave untrusted too, for its library (libjxl, not fuzzed by libvips). The
        // setting keeps files runner did not make from untrusted parsers; a saver parses no file, only
        // pixels already decoded, and runs only for an output that asks for jxl, so it stays unblocked.
        vips_operation_block_set("VipsForeignSaveJxl", 0)
        blocksUntrusted.store(blockUntrusted, ordering: .relaxed)
        VipsWarnings.install()
    }

    private static let blocksUntrusted = Atomic(false)

    /// Runs `body`, which decodes `bytes` runner itself encoded (a quality search scoring its JPEG XL),
    /// with the JPEG XL loader allowed: the block keeps parsers from files runner did not make. A
    /// worker decodes one source at a time, so nothing else is loading meanwhile.
    package static func unblocking<Result>(ownOutput bytes: Data, _ body: () throws(VipsError) -> Result) throws(VipsError) -> Result {
        let isJXL = bytes.starts(with: [0xFF, 0x0A]) || bytes.starts(with: [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20])
        guard isJXL, blocksUntrusted.load(ordering: .relaxed) else { return try body() }
        vips_operation_block_set("VipsForeignLoadJxl", 0)
        defer { vips_operation_block_set("VipsForeignLoadJxl", 1) }
        return try body()
    }

    package static var version: String { String(cString: vips_version_string()) }

    /// With glibc's defaults the few megabytes of buffers every image frees go back to the kernel and
    /// fault in again, zeroed, for the next (about 7% of a small thumbnail's time). Freed memory up to
    /// 128 MiB stays for reuse; blocks of 32 MiB or more are still unmapped, so a huge image pins nothing.
    package static func keepFreedMemory() {
        cvips_keep_freed_memory(32 << 20, 128 << 20)
    }

    /// Runs `body` on a thread libvips started, and waits for it. libvips keeps a reserve of region buffers per
    /// thread, but only on its own threads. On any other thread, every strip a region moves to gets fresh
    /// buffers at each step of the pipeline, each zeroed (`vips_tracked_malloc`): for a 1920 px output of a
    /// large photo that is hundreds of megabytes of memset per image, about a tenth of its decode and resize.
    package static func onLibvipsThread<Result>(_ body: () -> Result) -> Result {
        withoutActuallyEscaping(body) { body in
            var result: Result?
            let call = ThreadCall { result = body() }
            let context = Unmanaged.passRetained(call).toOpaque()
            guard let thread = vips_g_thread_new("runner", { context in
                Unmanaged<ThreadCall>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context) else {
                // No thread to be had (libvips said why): the work still runs, only slower.
                Unmanaged<ThreadCall>.fromOpaque(context).release()
                VipsError.clearMessages()
                return body()
            }
            _ = g_thread_join(thread)
            return result!
        }
    }
}

/// The work `VipsRuntime.onLibvipsThread` hands to its thread.
private final class ThreadCall {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
