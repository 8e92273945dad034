// swift-tools-version:6.1
import PackageDescription

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
        // Non-variadic wrappers around libvips (Swift cannot call C varargs).
        .systemLibrary(name: "CVips", path: "Sources/CVips", pkgConfig: "vips",
                       providers: [.apt(["libvips-dev"])]),
        // Typed wrappers for libcurl's variadic setopt/getinfo calls.
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // Linux calls the Glibc module leaves out (it is built without _GNU_SOURCE).
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
        // The library, one target per stage of the flow
        // (manifest -> plan -> state -> write -> report -> load -> process -> schedule -> run):
        // each depends only on targets before it, so an arrow against the flow does not compile.
        .target(name: "Support", dependencies: ["CSystem"]),
        .target(name: "Model", dependencies: ["Support"]),
        .target(name: "Keys", dependencies: ["Support"]),
        .target(name: "Imaging", dependencies: ["Keys", "Model", "CVips"]),
        .target(name: "Manifest", dependencies: ["Imaging"]),
        .target(name: "Planning", dependencies: ["Manifest"]),
        .target(name: "State", dependencies: ["Planning", .product(name: "GRDB", package: "GRDB.swift"),
                                              .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        .target(name: "Output", dependencies: ["State"]),
        .target(name: "Reporting", dependencies: ["Output"]),
        .target(name: "Loading", dependencies: ["Reporting", "CCurl"]),
        .target(name: "Processing", dependencies: ["Output", "CVips"]),
        .target(name: "Scheduling", dependencies: ["Loading", "Processing"]),
        .target(name: "Pipeline", dependencies: ["Scheduling"]),
        .executableTarget(
            name: "runner",
            dependencies: [
                "Pipeline",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/runner"
        ),
        // libvips calls only the tests make (opening and comparing outputs).
        .systemLibrary(name: "CVipsProbe", path: "Tests/CVipsProbe", pkgConfig: "vips"),
        // Shared by the test targets: fixtures, temporary workspaces, running the built binary,
        // and opening outputs with libvips directly.
        .target(
            name: "TestSupport",
            dependencies: ["CVips", "CVipsProbe", "Pipeline", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "RunnerCoreTests",
            dependencies: ["Pipeline", "CVips", "TestSupport"],
            path: "Tests/RunnerCoreTests"
        ),
        .testTarget(
            name: "RunnerCLITests",
            dependencies: ["Pipeline", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/RunnerCLITests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
