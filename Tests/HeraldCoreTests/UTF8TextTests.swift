import HeraldPushCore
import Testing

@Suite("String(utf8Validating:): the standard library's answer, with ASCII taken on a short path")
struct UTF8TextTests {
    static let wellFormed: [[UInt8]] = [
        [], Array("plain ascii, with \"quotes\"".utf8), Array("é中😀".utf8), Array("mixed é then ascii".utf8), [0x7F], [0xF4, 0x8F, 0xBF, 0xBF],
    ]
    static let malformed: [[UInt8]] = [
        [0xC3, 0x28],  // a lead byte without its continuation
        [0xC0, 0x80],  // an overlong NUL
        [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
        [0xE4, 0xB8],  // cut short
        [0x61, 0xFF, 0x62],  // never valid
        [0xF4, 0x90, 0x80, 0x80],  // past U+10FFFF
    ]

    @Test("well-formed bytes give the string the standard library gives", arguments: wellFormed)
    func same(bytes: [UInt8]) {
        let standard = String(validating: bytes, as: UTF8.self)
        #expect(standard != nil)
        #expect(bytes.withUnsafeBufferPointer { String(utf8Validating: $0) } == standard)
        #expect(bytes.withUnsafeBytes { String(utf8Validating: $0) } == standard)
    }

    @Test("malformed bytes give nil", arguments: malformed)
    func refused(bytes: [UInt8]) {
        #expect(bytes.withUnsafeBufferPointer { String(utf8Validating: $0) } == nil)
        #expect(bytes.withUnsafeBytes { String(utf8Validating: $0) } == nil)
    }
}
