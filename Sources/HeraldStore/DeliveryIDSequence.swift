import Foundation
import HeraldPushCore

/// The apns-ids of one event's deliveries: one random UUID per event whose last 48 bits are
/// replaced by each device's row id. As unique as a random UUID per delivery, without a
/// random draw and a formatted string per device (a fan-out to 100,000 devices).
struct DeliveryIDSequence {
    private let base: [UInt8]

    init() {
        let u = UUID.random().uuid
        base = [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9]
    }

    /// The lowercase 8-4-4-4-12 form APNs takes.
    func id(for deviceRow: Int64) -> String { uuid(for: deviceRow).lowercased }

    /// The id as a UUID and in its stored form.
    func uuid(for deviceRow: Int64) -> (uuid: UUID, lowercased: String) {
        var bytes = base
        for shift in stride(from: 40, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: deviceRow >> Int64(shift))) }
        let uuid = UUID(bytes: bytes)
        return (uuid, uuid.lowercasedString)
    }
}
