import Foundation

/// Phil Harvey's `exiftool` (Debian `libimage-exiftool-perl`, installed by `make deps`): an
/// independent reader and writer of EXIF, XMP, IPTC and ICC in every container runner writes,
/// so metadata tests neither trust libvips' own reading nor runner's.
public enum ExifTool {
    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }

    private static let path = "/usr/bin/exiftool"

    /// Writes tags (`-EXIF:Artist=Jane`, ...) into `file` in place.
    public static func write(_ assignments: [String], into file: String) throws {
        let result = try run(["-q", "-q", "-overwrite_original"] + assignments + [file])
        guard result.status == 0 else { throw Failed(description: "exiftool could not write \(file): \(result.stderr)") }
    }

    /// Every tag of `file` as `Group:Name` (exiftool's family 1 groups: `IFD0`, `ExifIFD`, `GPS`,
    /// `XMP-dc`, `IPTC`, `ICC_Profile`, ...) and its printed value; lists joined with ", ".
    public static func tags(of file: String) throws -> [String: String] {
        let result = try run(["-json", "-G1", "-a", "-struct", file])
        guard result.status == 0, let array = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]],
              let tags = array.first else { throw Failed(description: "exiftool could not read \(file): \(result.stderr)") }
        return tags.mapValues { value in
            if let list = value as? [Any] { return list.map { "\($0)" }.joined(separator: ", ") }
            return "\(value)"
        }
    }

    /// The bytes of binary tag `tag` (`ThumbnailImage`, `PhotoshopThumbnail`, ...) of `file`; empty when it has none.
    public static func binary(_ tag: String, of file: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-b", "-" + tag, file]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }

    private static func run(_ arguments: [String]) throws -> CommandResult {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failed(description: "exiftool is not installed (apt-get install libimage-exiftool-perl, or make deps)")
        }
        return try RunningCommand(path, arguments: arguments, directory: NSTemporaryDirectory(), environment: [:]).wait()
    }
}
