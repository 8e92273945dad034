import CVips
import Foundation
import Testing
import TestSupport

/// Photographs Debian ships as wallpapers, when installed (`make bench` installs them): the JPEGs
/// under /usr/share/backgrounds (Lomiri's and MATE's nature set; MATE's abstract and desktop sets
/// are renders of gradients and stripes, on which a dHash is mostly ties), and the largest JPEG of
/// each Plasma wallpaper (its other files are the same picture at other sizes, or a dark version).
func debianWallpapers() -> [String] {
    let manager = FileManager.default
    let isJPEG = { (name: String) in [".jpg", ".jpeg"].contains { name.lowercased().hasSuffix($0) } }
    var photos = ((try? manager.contentsOfDirectory(atPath: "/usr/share/backgrounds")) ?? []).filter(isJPEG)
        .map { "/usr/share/backgrounds/" + $0 }
    photos += ((try? manager.contentsOfDirectory(atPath: "/usr/share/backgrounds/mate/nature")) ?? []).filter(isJPEG)
        .map { "/usr/share/backgrounds/mate/nature/" + $0 }
    for wallpaper in (try? manager.contentsOfDirectory(atPath: "/usr/share/wallpapers")) ?? [] {
        let folder = "/usr/share/wallpapers/\(wallpaper)/contents/images"
        let sizes = ((try? manager.contentsOfDirectory(atPath: folder)) ?? []).filter(isJPEG)
        let pixels = { (name: String) in name.split(separator: ".")[0].split(separator: "x").compactMap { Int($0) }.reduce(1, *) }
        if let largest = sizes.max(by: { pixels($0) < pixels($1) }) { photos.append(folder + "/" + largest) }
    }
    return photos.sorted()
}

/// The image scaled to fit `side` (a photo of web size, and fast to work with).
private func scaled(_ image: VipsImageHandle, toFit side: Int) throws -> VipsImageHandle {
    try image.derive("thumbnail") { cvips_thumbnail_image($0, $1, Int32(side), Int32(side), VIPS_SIZE_DOWN, VIPS_INTERESTING_NONE) }
        .copiedToMemory()
}

/// Saved as a JPEG of `quality` and decoded again.
private func recompressed(_ image: VipsImageHandle, quality: Int) throws -> VipsImageHandle {
    let data = try image.encode("jpegsave") { cvips_jpegsave_buffer($0, $1, $2, Int32(quality), 0, VIPS_FOREIGN_SUBSAMPLE_AUTO, 0, CVIPS_KEEP_NONE) }
    let pointer = data.withUnsafeBytes { cvips_new_from_buffer($0.baseAddress, $0.count, VIPS_ACCESS_RANDOM, VIPS_FAIL_ON_ERROR) }
    guard let pointer else { throw VipsError.capture("jpegload") }
    return VipsImageHandle(taking: pointer, retaining: data)
}

/// `fraction` of each side cut off (left, top, right, bottom as given).
private func cropped(_ image: VipsImageHandle, left: Double = 0, top: Double = 0, right: Double = 0, bottom: Double = 0) throws -> VipsImageHandle {
    let (w, h) = (Double(image.width), Double(image.height))
    let x = Int32(w * left), y = Int32(h * top)
    let width = Int32(w * (1 - left - right)), height = Int32(h * (1 - top - bottom))
    return try image.derive("extract_area") { cvips_extract_area($0, $1, x, y, width, height) }
}

/// The copies a photo gets on its way round the web.
private enum Copy: String, CaseIterable, Hashable {
    case half = "half size"
    case jpeg = "JPEG q50"
    case web = "640 px, JPEG q75"
    case trimmed = "3% off each side"
    case corner = "5% off the left and top"

    func make(_ image: VipsImageHandle) throws -> VipsImageHandle {
        switch self {
        case .half: try image.derive("resize") { cvips_resize($0, $1, 0.5, 0.5, VIPS_KERNEL_LANCZOS3) }
        case .jpeg: try recompressed(image, quality: 50)
        case .web: try recompressed(scaled(image, toFit: 640), quality: 75)
        case .trimmed: try cropped(image, left: 0.03, top: 0.03, right: 0.03, bottom: 0.03)
        case .corner: try cropped(image, left: 0.05, top: 0.05)
        }
    }
}

/// A photo at web size: scaled to fit 1280 px while it is decoded (shrink-on-load), upright.
private func webSized(_ path: String) throws -> VipsImageHandle {
    ImageProbe.startVips()
    let source = try VipsSourceHandle(path: path, byName: true)
    var pointer: UnsafeMutablePointer<VipsImage>?
    guard cvips_thumbnail_source(source.pointer, &pointer, 1280, 1280, VIPS_SIZE_DOWN, VIPS_INTERESTING_NONE, 0,
                                 VIPS_FAIL_ON_ERROR, "", nil) == 0, let pointer else { throw VipsError.capture("thumbnail") }
    return try VipsImageHandle(taking: pointer, retaining: nil).copiedToMemory()
}

/// Hamming distances between the hashes of a photo and its copies, and between different photos.
private struct Distances {
    var copies: [Copy: [Int]] = [:]
    var different: [Int] = []

    /// dHash's distances, then pHash's, from the same frames.
    static func measure(_ photos: [String]) throws -> (dHash: Distances, pHash: Distances) {
        var (dHash, pHash) = (Distances(), Distances())
        var originals: [(UInt64, UInt64)] = []
        let hashes = { (image: VipsImageHandle) throws -> (UInt64, UInt64) in
            let grey = try DerivationFrame(image).grey
            return (DHash().hash(of: grey), PHash().hash(of: grey))
        }
        for photo in photos {
            let original = try webSized(photo)
            let value = try hashes(original)
            for copy in Copy.allCases {
                let made = try hashes(copy.make(original))
                dHash.copies[copy, default: []].append((made.0 ^ value.0).nonzeroBitCount)
                pHash.copies[copy, default: []].append((made.1 ^ value.1).nonzeroBitCount)
            }
            dHash.different += originals.map { ($0.0 ^ value.0).nonzeroBitCount }
            pHash.different += originals.map { ($0.1 ^ value.1).nonzeroBitCount }
            originals.append(value)
        }
        return (dHash, pHash)
    }

    /// One line per kind of copy, and one for different photos: median, largest or smallest, counts per distance.
    var summary: String {
        let counts = { (values: [Int]) in
            Dictionary(grouping: values, by: { $0 }).sorted { $0.key < $1.key }.map { "\($0.key):\($0.value.count)" }.joined(separator: " ")
        }
        var lines = Copy.allCases.map { copy in
            let values = (copies[copy] ?? []).sorted()
            return "\(copy.rawValue): median \(values[values.count / 2]), max \(values.last ?? 0); \(counts(values))"
        }
        let apart = different.sorted()
        lines.append("different photos (\(apart.count) pairs): min \(apart[0]), 1st percentile \(apart[apart.count / 100]), "
                     + "median \(apart[apart.count / 2]); \(counts(apart))")
        return lines.joined(separator: "\n")
    }
}

@Suite("The default duplicate distance, from measured distances")
struct DuplicateDistanceTests {
    /// Debian's wallpaper photos when installed (49 with the four packages `make bench` installs;
    /// docs/DESIGN.md has their figures), else the fixture photos, some of which are crops
    /// of the same photos, so the two sets are never mixed. pHash's figures are printed beside
    /// dHash's for comparison.
    @Test("resized and recompressed copies are within the default dHash distance, 3% crops within 12 bits, different photos beyond the default")
    func defaultDistanceSeparates() throws {
        let wallpapers = debianWallpapers()
        let photos = wallpapers.count >= 20 ? wallpapers : fixturePhotos
        let (distances, pHash) = try Distances.measure(photos)
        print("dHash over \(photos.count) photos:\n\(distances.summary)\npHash:\n\(pHash.summary)")
        let limit = DHash.duplicateDistance
        for copy in [Copy.half, .jpeg, .web] {
            #expect(distances.copies[copy]?.allSatisfy { $0 <= limit } == true, "\(copy.rawValue): \(distances.summary)")
        }
        // Measured: at most 10 bits on libvips 8.14, 11 on 8.16 (its resampling differs a little).
        #expect(distances.copies[.trimmed]?.allSatisfy { $0 <= 12 } == true, "\(distances.summary)")
        let within = distances.different.filter { $0 <= limit }.count
        #expect(within == 0, "\(within) of \(distances.different.count) pairs of different photos are within \(limit) bits")
    }
}
