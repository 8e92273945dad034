import CVips
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

    private static let started: Bool = {
        _ = cvips_init("runner-tests")
        vips_cache_set_max(0)
        return true
    }()

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
        var loaderName: UnsafePointer<CChar>?
        _ = vips_image_get_string(image, "vips-loader", &loaderName)
        let interpretation = vips_image_get_interpretation(image)
        return ImageProbe(width: Int(vips_image_get_width(image)), height: Int(vips_image_get_height(image)),
                          bands: Int(vips_image_get_bands(image)), loader: loaderName.map { String(cString: $0) } ?? "",
                          hasAlpha: vips_image_hasalpha(image) != 0,
                          interpretation: String(cString: vips_enum_nick(vips_interpretation_get_type(), Int32(interpretation.rawValue))),
                          average: mean, bandAverages: means)
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
