// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "runner",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "runner", targets: ["runner"]),
        .library(name: "RunnerCore", targets: ["RunnerCore"]),
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
        .target(
            name: "RunnerCore",
            dependencies: [
                "CVips",
                "CCurl",
                "CSystem",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/RunnerCore"
        ),
        .executableTarget(
            name: "runner",
            dependencies: [
                "RunnerCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/runner"
        ),
        // Shared by the test targets: fixtures, temporary workspaces, running the built binary,
        // and opening outputs with libvips directly.
        .target(
            name: "TestSupport",
            dependencies: ["CVips", "RunnerCore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "RunnerCoreTests",
            dependencies: ["RunnerCore", "CVips", "TestSupport"],
            path: "Tests/RunnerCoreTests"
        ),
        .testTarget(
            name: "RunnerCLITests",
            dependencies: ["RunnerCore", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/RunnerCLITests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
