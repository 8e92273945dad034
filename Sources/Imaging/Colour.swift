import Foundation
import Support
import Keys

/// A colour written `#rgb`, `#rrggbb` or `#rrggbbaa` in a job file.
package struct Colour: Sendable, Equatable {
    package let red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8

    package static let black = Colour(red: 0, green: 0, blue: 0, alpha: 255)
    package static let white = Colour(red: 255, green: 255, blue: 255, alpha: 255)

    package init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8) {
        (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
    }

    package init?(hex text: String) {
        guard text.hasPrefix("#") else { return nil }
        var digits = Array(text.dropFirst())
        if digits.count == 3 { digits = digits.flatMap { [$0, $0] } }
        // Hex digits only: UInt8(_:radix:) would also take a sign.
        guard digits.count == 6 || digits.count == 8, digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
        let bytes = stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
        self.init(red: bytes[0], green: bytes[1], blue: bytes[2], alpha: bytes.count == 4 ? bytes[3] : 255)
    }

    /// What `init(hex:)` reads, as a JSON Schema pattern.
    package static let pattern = "^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$"

    /// As a job file would write it: `#rrggbb`, with `aa` only when not opaque.
    package var written: String { alpha == 255 ? String(canonical.dropLast(2)) : canonical }

    /// Canonical spelling for identifiers: always `#rrggbbaa`, lower case.
    package var canonical: String {
        "#" + [red, green, blue, alpha].map { String(format: "%02x", $0) }.joined()
    }

    /// Band values for an image with `bands` bands (grey images get the colour's luminance).
    package func bandValues(bands: Int) -> [Double] {
        let grey = (0.2126 * Double(red) + 0.7152 * Double(green) + 0.0722 * Double(blue)).rounded()
        switch bands {
        case 1: return [grey]
        case 2: return [grey, Double(alpha)]
        case 3: return [Double(red), Double(green), Double(blue)]
        default: return [Double(red), Double(green), Double(blue), Double(alpha)]
        }
    }
}

extension Key where Value == Colour {
    package static func colour(_ name: String, _ presence: Presence<Colour>, _ summary: String) -> Key {
        Key(name, presence, summary + " Written #rgb, #rrggbb or #rrggbbaa.", schema: ["type": "string", "pattern": .string(Colour.pattern)],
            written: { .string($0.written) }) { value, location in
            guard case .string(let text) = value else { throw JobFileError(location, "must be a string, not \(value.kindName)") }
            guard let colour = Colour(hex: text) else {
                throw JobFileError(location, "must be a colour as #rgb, #rrggbb or #rrggbbaa, not \(Quoted.value(text))")
            }
            return colour
        }
    }
}
