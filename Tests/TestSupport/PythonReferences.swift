import Foundation

/// The reference implementations derived values are checked against, from PyPI: `thumbhash`,
/// `blurhash` and `imagehash`, run by Debian's Python, whose `python3-numpy`, `python3-scipy`,
/// `python3-pil` and `python3-pywt` (installed by `make deps`) they need. Debian's Python takes no
/// packages into its own folders (PEP 668), so pip installs these three, pinned, into
/// `.build/python-references` (also `make deps`); a test installs them there when they are missing.
public enum PythonReferences {
    public static let packages = ["thumbhash==0.1.2", "blurhash==1.1.5", "imagehash==4.3.2"]

    public static let folder: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent(".build/python-references").path
    }()

    public struct Unavailable: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    private static let installed: Result<Void, Unavailable> = {
        let check = try? run("import thumbhash, blurhash, imagehash, numpy, scipy, PIL", [], installing: false)
        if check?.status == 0 { return .success(()) }
        guard let pip = try? RunningCommand(systemPython, arguments: ["-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                                                      "--no-deps", "--target", folder] + packages,
                                            directory: NSTemporaryDirectory(), environment: [:]).wait(), pip.status == 0 else {
            return .failure(Unavailable(description: "pip could not install \(packages) into \(folder)"))
        }
        let again = try? run("import thumbhash, blurhash, imagehash, numpy, scipy, PIL", [], installing: false)
        guard again?.status == 0 else {
            return .failure(Unavailable(description: "the references do not import (make deps installs python3-numpy, python3-scipy, "
                                        + "python3-pil, python3-pywt): \(again?.stderr ?? "")"))
        }
        return .success(())
    }()

    private static let systemPython = "/usr/bin/python3"

    /// Runs `program` with the references importable, installing them first when they are missing.
    public static func run(_ program: String, _ arguments: [String]) throws -> CommandResult {
        try run(program, arguments, installing: true)
    }

    private static func run(_ program: String, _ arguments: [String], installing: Bool) throws -> CommandResult {
        if installing { try installed.get() }
        return try RunningCommand(systemPython, arguments: ["-c", program] + arguments, directory: NSTemporaryDirectory(),
                                  environment: ["PYTHONPATH": folder, "PYTHONWARNINGS": "ignore"]).wait()
    }
}
