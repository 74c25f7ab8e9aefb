import Foundation
import HeraldCore
import HeraldPushCore
import Testing

@Suite("JSONValue(parsing:): RFC 8259 without Foundation, the same values the Decodable conformance gives")
struct JSONParserTests {
    static let documents = [
        #"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
        #"  {"z":1 , "a" : -0 ,"m":[ ] ,"o":{ }}  "#,
        #"{"n":[0,-1,9223372036854775807,-9223372036854775808,18446744073709551615,1.5,-2.5e-3,1E+2,6.02e23]}"#,
        // Integers past Int64 and UInt64 are doubles, never clamped into range.
        #"{"n":[-9223372036854775809,18446744073709551616,-99999999999999999999]}"#,
        #"{"s":"plain","e":"\"\\\/\b\f\n\r\t","u":"\u00e9\u4e2d\ud83d\ude00","raw":"é中😀"}"#,
        #"{"dup":1,"dup":2,"a":{"dup":"x","dup":"y"}}"#,
        // Small objects are sorted in place, larger ones (over 16 fields) otherwise: both keep a
        // repeated key's first value.
        #"{"c":1,"a":2,"c":3,"b":4,"a":5,"a":6,"d":{"y":1,"x":2,"y":3}}"#,
        #"{"same":1,"same":2,"same":3}"#,
        "{" + (0..<20).reversed().map { #""k\#($0 % 17)":\#($0)"# }.joined(separator: ",") + "}",
        #"[1,"two",{"three":[3]}]"#,
        #""just a string""#,
        "42",
    ]

    @Test("the same value as JSONDecoder's JSONValue", arguments: documents)
    func sameAsDecoder(document: String) throws {
        let parsed = try JSONValue(parsing: Array(document.utf8))
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8))
        #expect(parsed == decoded)
        #expect(parsed.encoded == decoded.encoded)
    }

    static let invalid = [
        "", " ", "{", "}", "[1,]", "[1 2]", #"{"a" 1}"#, #"{"a":1,}"#, #"{a:1}"#, "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity",
        "tru", "nul", #""unterminated"#, "\"tab\there\"", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00x""#, #""\ud800\u0041""#,
        "[1] [2]", #"{"a":1}x"#, "1e999",
    ]

    @Test("invalid documents are refused, as JSONSerialization refuses them", arguments: invalid)
    func refused(document: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(document.utf8)) }
    }

    @Test("invalid UTF-8 and nesting past the limit are refused; the limit itself parses")
    func limits() throws {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0x5C, 0x22, 0xFF, 0x22]) }
        let deep = String(repeating: "[", count: JSONValue.maximumDepth + 1) + String(repeating: "]", count: JSONValue.maximumDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(deep.utf8)) }
        let limit = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        _ = try JSONValue(parsing: Array(limit.utf8))
    }
}
