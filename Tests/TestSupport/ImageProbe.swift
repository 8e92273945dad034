import CVips
import CVipsProbe
import Foundation

/// Opens an image with libvips itself, independently of runner's own code, so tests check
/// what a user would see in the file rather than what runner reports.
public struct ImageProbe: Sendable {
    public let width: Int
    public let height: Int
    public let bands: Int
    public let loader: String
    public let hasAlpha: Bool
    public let interpretation: String
    /// Mean over all bands and pixels.
    public let average: Double
    /// Mean of each band.
    public let bandAverages: [Double]
    /// `uchar`, `ushort`, ...
    public let bandFormat: String
    /// Frames in the file (`n-pages`; 1 when the format has no pages) and the height of one.
    public let pages: Int
    public let pageHeight: Int
    /// Names of every metadata item the loader found (`exif-data`, `icc-profile-data`, ...).
    public let fields: [String]
    /// String-valued metadata such as `jpeg-chroma-subsample` or `heif-compression`.
    public let strings: [String: String]
    /// Integer-valued metadata such as `loop`, `palette-bit-depth`, `orientation`.
    public let ints: [String: Int]
    /// Frame delays in milliseconds (`delay`), empty when absent.
    public let delays: [Int]
    /// Size of the embedded ICC profile in bytes, 0 when there is none.
    public let iccProfileBytes: Int

    /// A palette PNG's bits per index: 8.14 says `palette-bit-depth`, 8.15+ `palette` and `bits-per-sample`.
    public var paletteBitDepth: Int? { ints["palette-bit-depth"] ?? (ints["palette"] == 1 ? ints["bits-per-sample"] : nil) }

    private static let started: Bool = {
        _ = cvips_init("runner-tests")
        vips_cache_set_max(0)
        return true
    }()

    /// Starts libvips once per test process. vips_init is not safe to race: a second caller
    /// returns before the first has finished, so every test goes through this one gate.
    public static func startVips() { _ = started }

    /// The version of the libvips this process runs on (the one runner was linked with too).
    public static let libvipsVersion = String(cString: vips_version_string())

    /// A file only an untrusted loader reads (JPEG XL), opened as the PNG the libvips tools decode it
    /// to beside it: the tests share a process in which runner's own start blocks those loaders.
    public static func openUntrusted(_ path: String) throws -> ImageProbe? {
        try VipsCLI.run("vips", ["copy", path, path + ".png"])
        return open(path + ".png")
    }

    /// nil when libvips cannot open or fully decode the file.
    public static func open(_ path: String) -> ImageProbe? {
        _ = started
        guard let image = cvips_new_from_file(path, VIPS_ACCESS_RANDOM) else {
            vips_error_clear()
            return nil
        }
        defer { g_object_unref(UnsafeMutableRawPointer(image)) }
        var mean = 0.0
        guard cvips_avg(image, &mean) == 0 else { vips_error_clear(); return nil }
        var means: [Double] = []
        for band in 0..<Int(vips_image_get_bands(image)) {
            var single: UnsafeMutablePointer<VipsImage>?
            var value = 0.0
            guard cvips_extract_band(image, &single, Int32(band)) == 0, let single else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(single)) }
            guard cvips_avg(single, &value) == 0 else { return nil }
            means.append(value)
        }
        var fields: [String] = []
        if let names = vips_image_get_fields(image) {
            var index = 0
            while let name = names[index] { fields.append(String(cString: name)); index += 1 }
            g_strfreev(names)
        }
        var strings: [String: String] = [:]
        var ints: [String: Int] = [:]
        for field in fields {
            // GType's constants are C macros Swift cannot see; their names are stable.
            let type = g_type_name(vips_image_get_typeof(image, field)).map { String(cString: $0) }
            if type == "gchararray" || type == "VipsRefString" {
                var text: UnsafePointer<CChar>?
                if vips_image_get_string(image, field, &text) == 0, let text { strings[field] = String(cString: text) }
            } else if type == "gint" {
                var value: Int32 = 0
                if vips_image_get_int(image, field, &value) == 0 { ints[field] = Int(value) }
            }
        }
        var delays: [Int] = []
        var delayArray: UnsafeMutablePointer<Int32>?
        var delayCount: Int32 = 0
        if cvips_image_has(image, "delay") != 0, vips_image_get_array_int(image, "delay", &delayArray, &delayCount) == 0, let delayArray {
            delays = (0..<Int(delayCount)).map { Int(delayArray[$0]) }
        }
        var profile: UnsafeRawPointer?
        var profileLength = 0
        if cvips_image_has(image, "icc-profile-data") == 0 || vips_image_get_blob(image, "icc-profile-data", &profile, &profileLength) != 0 {
            profileLength = 0
        }
        let interpretation = vips_image_get_interpretation(image)
        let format = vips_image_get_format(image)
        let height = Int(vips_image_get_height(image))
        return ImageProbe(width: Int(vips_image_get_width(image)), height: height,
                          bands: Int(vips_image_get_bands(image)), loader: strings["vips-loader"] ?? "",
                          hasAlpha: vips_image_hasalpha(image) != 0,
                          interpretation: String(cString: vips_enum_nick(vips_interpretation_get_type(), Int32(interpretation.rawValue))),
                          average: mean, bandAverages: means,
                          bandFormat: String(cString: vips_enum_nick(vips_band_format_get_type(), format.rawValue)),
                          pages: max(ints["n-pages"] ?? 1, 1), pageHeight: ints["page-height"] ?? height,
                          fields: fields, strings: strings, ints: ints, delays: delays, iccProfileBytes: profileLength)
    }

    /// Band values of one pixel.
    public static func pixel(_ path: String, x: Int, y: Int) -> [Double]? {
        _ = started
        guard let image = cvips_new_from_file(path, VIPS_ACCESS_RANDOM) else { vips_error_clear(); return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(image)) }
        var vector: UnsafeMutablePointer<Double>?
        var count: Int32 = 0
        guard cvips_getpoint(image, &vector, &count, Int32(x), Int32(y)) == 0, let vector else { return nil }
        defer { g_free(vector) }
        return Array(UnsafeBufferPointer(start: vector, count: Int(count)))
    }

    /// Mean absolute difference per band value between two images of the same size.
    public static func meanAbsoluteDifference(_ first: String, _ second: String) -> Double? {
        _ = started
        guard let left = cvips_new_from_file(first, VIPS_ACCESS_RANDOM),
              let right = cvips_new_from_file(second, VIPS_ACCESS_RANDOM) else { vips_error_clear(); return nil }
        defer {
            g_object_unref(UnsafeMutableRawPointer(left))
            g_object_unref(UnsafeMutableRawPointer(right))
        }
        var difference: UnsafeMutablePointer<VipsImage>?
        var absolute: UnsafeMutablePointer<VipsImage>?
        guard cvips_subtract(left, right, &difference) == 0, let difference else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(difference)) }
        guard cvips_abs(difference, &absolute) == 0, let absolute else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(absolute)) }
        var mean = 0.0
        return cvips_avg(absolute, &mean) == 0 ? mean : nil
    }
}

/// libvips' own command-line tools (`vips`, `vipsthumbnail` from libvips-tools), to compare
/// runner's output with what libvips itself makes of the same fixture.
public enum VipsCLI {
    public struct Missing: Error, CustomStringConvertible {
        public let tool: String
        public var description: String { "\(tool) is not installed (apt-get install libvips-tools); this comparison cannot run" }
    }

    public struct Failed: Error, CustomStringConvertible {
        public let command: String
        public let status: Int32
        public let stderr: String
        public var description: String { "\(command) exited \(status): \(stderr)" }
    }

    /// Where the tools of the libvips this process runs on are: the built prefix's `bin/` (beside its
    /// `lib/`), or Debian's /usr/bin; so a comparison with `vips thumbnail` compares like with like.
    public static let folders: [String] = {
        let library = LoadedLibraries.paths(named: "libvips.so").first.map { URL(fileURLWithPath: $0) }
        let prefixBin = library?.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("bin").path
        return (prefixBin.map { [$0] } ?? []) + ["/usr/bin", "/usr/local/bin"]
    }()

    /// Runs `tool arguments...` and waits; throws when the tool is missing or fails.
    public static func run(_ tool: String, _ arguments: [String]) throws {
        guard let path = folders.map({ "\($0)/\(tool)" }).first(where: FileManager.default.isExecutableFile) else {
            throw Missing(tool: tool)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failed(command: ([tool] + arguments).joined(separator: " "), status: process.terminationStatus,
                         stderr: String(decoding: message, as: UTF8.self))
        }
    }
}

/// The shared libraries a process has mapped, from its /proc maps.
public enum LoadedLibraries {
    /// The distinct files mapped by `pid` (this process by default) whose name starts with `prefix`.
    public static func paths(named prefix: String, pid: Int32? = nil) -> [String] {
        let maps = procFile("/proc/\(pid.map(String.init) ?? "self")/maps")
        let files = maps.split(separator: "\n").compactMap { line -> String? in
            guard let slash = line.firstIndex(of: "/") else { return nil }
            let path = String(line[slash...])
            return (path as NSString).lastPathComponent.hasPrefix(prefix) ? path : nil
        }
        return Array(Set(files)).sorted()
    }
}

/// A /proc file's whole text. Foundation reads a file as long as its size says, and /proc files say 0:
/// it gets the first page at most (a process's maps run to dozens of pages).
public func procFile(_ path: String) -> String {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return "" }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
