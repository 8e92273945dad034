// swift-tools-version:6.1
import Foundation
import PackageDescription

/// The libvips runner builds against and runs on: Debian 13's 8.16 that `make deps` builds into
/// .build/libvips-8.16 (deps/build-libvips.sh), or Debian 12's libvips-dev 8.14 with LIBVIPS=system
/// (or while that prefix is not built). Both compile against Debian's GLib and codecs, whose flags
/// come from pkg-config's `vips`; the prefix's headers come first and its library is linked with a
/// RUNPATH, so the binary loads it without LD_LIBRARY_PATH and never Debian's libvips beside it.
let libvipsPrefix: String? = {
    let prefix = Context.packageDirectory + "/.build/libvips-8.16"
    guard Context.environment["LIBVIPS"] != "system",
          FileManager.default.fileExists(atPath: prefix + "/lib/pkgconfig/vips.pc") else { return nil }
    return prefix
}()

/// What pkg-config's `vips` gives a compiler (the include paths alone: GLib's, which <vips/vips.h>
/// includes) and the linker (libvips and the GLib libraries runner calls). Read here rather than with
/// `.systemLibrary(pkgConfig:)`: SwiftPM reads .pc files itself, and the -pthread in the Cflags of
/// libvips' private dependencies (OpenEXR, HarfBuzz, orc, ...) is a flag it does not forward, so
/// every build printed "warning: prohibited flag(s): -pthread". Without pkg-config or libvips-dev
/// the manifest stops with a message: SwiftPM caches what a manifest evaluates to (until it or the
/// environment changes), so flags left empty would still be empty after `make deps` installed them.
func vipsFlags(_ options: String...) -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["pkg-config"] + options + ["vips"]
    let output = Pipe()
    process.standardOutput = output
    if (try? process.run()) != nil {
        let flags = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 0 {
            return String(decoding: flags, as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
        }
    }
    FileHandle.standardError.write(Data("runner builds with pkg-config's vips: install pkg-config and libvips-dev (make deps)\n".utf8))
    exit(1)
}
let vipsIncludes = vipsFlags("--cflags-only-I")
let vipsLibraries = vipsFlags("--libs-only-L", "--libs-only-l")

let package = Package(
    name: "runner",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "runner", targets: ["runner"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Non-variadic wrappers around libvips (Swift cannot call C varargs); its flags are
        // `vipsIncludes` and `vipsLibraries`, below.
        .systemLibrary(name: "CVips", path: "Sources/CVips"),
        // Typed wrappers for libcurl's variadic setopt/getinfo calls.
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // Linux calls the Glibc module leaves out (it is built without _GNU_SOURCE).
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
        // OpenSSL's SHA-256 and HMAC, for object-store signatures (docs/DESIGN.md, Choices).
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The library, one target per stage of the flow (docs/ARCHITECTURE.md):
        // job file -> plan -> schedule -> load -> process -> write -> record.
        // Each depends only on the stages it uses: JobFile reads the job; Planning plans it against
        // State (the ledger planning reads and recording writes); Output publishes and records;
        // Loading fetches; Processing is the worker's image code; Scheduling runs both; Pipeline
        // wires a run. An import against the flow does not compile.
        .target(name: "Support", dependencies: ["CSystem"]),
        // S3-compatible stores: SigV4 signing and the credentials chain, below every stage that
        // lists, fetches, writes or records in a bucket.
        .target(name: "ObjectStore", dependencies: ["Support", "CCurl", "CCrypto"]),
        .target(name: "Model", dependencies: ["Support"]),
        .target(name: "Keys", dependencies: ["Support"]),
        // SSIMULACRA2's per-pixel loops, optimised even in debug builds (the tests score real photos).
        .target(name: "CPerceptual", cSettings: [.unsafeFlags(["-O3", "-fno-math-errno", "-fassociative-math", "-fno-signed-zeros", "-fno-trapping-math"])]),
        .target(name: "Imaging", dependencies: ["Keys", "Model", "CVips", "CPerceptual"]),
        .target(name: "JobFile", dependencies: ["Imaging", "ObjectStore"]),
        .target(name: "Planning", dependencies: ["JobFile", "ObjectStore"]),
        .target(name: "State", dependencies: ["Planning", .product(name: "GRDB", package: "GRDB.swift"),
                                              .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        .target(name: "Output", dependencies: ["State"]),
        // The HTML report's style and script, compiled into the binary (it stays one file).
        .target(name: "Reporting", dependencies: ["Output"],
                resources: [.embedInCode("Resources/report.css"), .embedInCode("Resources/report.js")]),
        .target(name: "Loading", dependencies: ["Output", "CCurl"]),
        .target(name: "Processing", dependencies: ["JobFile", "CVips"]),
        .target(name: "Scheduling", dependencies: ["Reporting", "Loading"]),
        .target(name: "Pipeline", dependencies: ["Scheduling", "Processing"]),
        .executableTarget(
            name: "runner",
            dependencies: [
                "Pipeline",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/runner"
        ),
        // libvips calls only the tests make (opening and comparing outputs).
        .systemLibrary(name: "CVipsProbe", path: "Tests/CVipsProbe"),
        // Shared by the test targets: fixtures, temporary workspaces, running the built binary,
        // and opening outputs with libvips directly.
        .target(
            name: "TestSupport",
            dependencies: ["CVips", "CVipsProbe", "Pipeline", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "RunnerCoreTests",
            dependencies: ["CVips", "ObjectStore", "TestSupport"],
            path: "Tests/RunnerCoreTests"
        ),
        .testTarget(
            name: "RunnerCLITests",
            dependencies: ["TestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/RunnerCLITests"
        ),
    ],
    swiftLanguageModes: [.v6]
)

if let libvipsPrefix {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-Xcc", "-I\(libvipsPrefix)/include"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [
            .unsafeFlags(["-L\(libvipsPrefix)/lib", "-Xlinker", "-rpath", "-Xlinker", "\(libvipsPrefix)/lib"]),
        ]
    }
}

// Every target that imports CVips or CVipsProbe, or a module that does, reads their headers, and
// what links them links libvips (as `pkgConfig:` gave a system library's dependents); after the
// prefix's paths, which come first.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(vipsIncludes.flatMap { ["-Xcc", $0] })]
    target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(vipsLibraries)]
}
