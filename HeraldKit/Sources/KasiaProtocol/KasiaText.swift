/// How Kasia pushes write addresses and amounts; the gateway's alert and the app's extension agree.
public enum KasiaText {
    public static let sompiPerKAS: UInt64 = 100_000_000

    /// First 8 characters, `...`, last 6; short strings stay whole.
    public static func shortAddress(_ address: String) -> String {
        guard address.count > 14 + 3 else { return address }
        return String(address.prefix(8)) + "..." + String(address.suffix(6))
    }

    /// Sompi as KAS with up to 8 decimals, trailing zeros trimmed: 150000000 → "1.5".
    public static func kas(sompi: UInt64) -> String {
        let whole = sompi / sompiPerKAS
        let fraction = sompi % sompiPerKAS
        guard fraction > 0 else { return String(whole) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 8 - digits.count) + digits
        while digits.last == "0" { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}
