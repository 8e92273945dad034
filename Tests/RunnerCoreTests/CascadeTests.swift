import CVips
import Testing
import TestSupport

/// Which kept frame a responsive set's output scales from, instead of decoding its source again.
@Suite("Cascade: the frame each smaller output is scaled from")
struct CascadeTests {
    @Test("a frame 1.5 times as large serves, although libvips rounded its side down")
    func roundedFramesServe() {
        // 2274x5021 to 1920 px wide is 1920x4239 (4239.4); 1280 px wide needs 1280x2826.3, rounded up.
        #expect(Cascade.base(for: (1280, 2827), among: [(1920, 4239)], decodeCost: 20_000_000) == 0)
        // The same 1280 px frame, already made for another format, is used as it is.
        #expect(Cascade.base(for: (1280, 2827), among: [(1920, 4239), (1280, 2826)], decodeCost: 20_000_000) == 1)
    }

    @Test("frames barely larger are not resampled again; two pixels off is not the same frame")
    func barelyLarger() {
        #expect(Cascade.base(for: (1280, 853), among: [(1700, 1133)], decodeCost: 20_000_000) == nil)
        #expect(Cascade.base(for: (1280, 853), among: [(1282, 854)], decodeCost: 20_000_000) == nil)
        #expect(Cascade.base(for: (1280, 853), among: [(1281, 854)], decodeCost: 20_000_000) == nil)
    }

    @Test("the smallest usable frame is taken, and only when scaling it costs less than decoding")
    func smallestWhenCheaper() {
        let frames = [(1920, 1280), (1280, 853), (640, 427)]
        #expect(Cascade.base(for: (320, 214), among: frames, decodeCost: 3_000_000) == 2)
        #expect(Cascade.base(for: (320, 214), among: frames, decodeCost: 200_000) == nil)
    }

    @Test("a JPEG's own decode costs its entropy decoding of the whole file, at any shrink")
    func jpegDecodeCost() throws {
        ImageProbe.startVips()
        try VipsRuntime.start(threadsPerImage: 1, blockUntrusted: true)
        let workspace = try Workspace()
        // 5680x4260, as wide as the widest photos of the benchmark's large set.
        let source = workspace.path("wide.jpg")
        try VipsCLI.run("vips", ["resize", Fixtures.path("photos/picos-de-europa.jpg"), source + "[Q=90]", "5.547"])
        let file = try VipsSourceHandle(path: source, byName: false)
        let image = try #require(cvips_open(file.pointer, VIPS_ACCESS_SEQUENTIAL, VIPS_FAIL_ON_NONE))
        let header = ImageHeader(VipsImageHandle(taking: image, retaining: nil))
        #expect(header.width == 5680 && header.height == 4260)
        // A 320 px thumbnail decodes at 1/8 (710x533, 380,000 pixels), but a 1920 px frame in
        // memory (2.8 MP) is still cheaper to scale than entropy-decoding all 24 MP.
        let cost = header.decodeCost(toMake: (320, 240), displayWidth: 5680)
        #expect(cost > 1920 * 1440)
        #expect(Cascade.base(for: (320, 240), among: [(1920, 1440)], decodeCost: cost) == 0)
    }
}
