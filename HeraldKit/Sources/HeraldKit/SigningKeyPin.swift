import Foundation

/// The app's signing key as the app trusts it: shipped in the app (`shipped`), or trusted at the
/// first registration and kept in the App Group (`trustOnFirstUse`). A registration answering
/// another key never replaces it silently: `HeraldClient` throws `signingKeyChanged`, and pushes
/// signed with the other key are refused until the app calls `replace(with:)`.
public struct SigningKeyPin: Sendable {
    enum Source: Sendable {
        case shipped(String)
        case store(SharedStore)
    }

    let source: Source

    /// A key the app ships (base64url, as `herald signing-key` prints it).
    public static func shipped(_ key: String) -> SigningKeyPin { SigningKeyPin(source: .shipped(key)) }

    /// The key of the first registration, kept in `store` (the extension reads it there).
    public static func trustOnFirstUse(_ store: SharedStore) -> SigningKeyPin { SigningKeyPin(source: .store(store)) }

    /// The pinned key, or nil before the first registration.
    public func pinnedKey() throws(HeraldClientError) -> String? {
        switch source {
        case .shipped(let key): return key
        case .store(let store):
            do { return try store.contents().pinnedSigningKey } catch { throw .invalidResponse("cannot read the pinned signing key: \(error)") }
        }
    }

    /// Pins `answered` when nothing is pinned yet; otherwise it must be the pinned key.
    public func check(_ answered: String) throws(HeraldClientError) {
        switch source {
        case .shipped(let key):
            guard key == answered else { throw .signingKeyChanged(pinned: key, answered: answered) }
        case .store(let store):
            var changed: String?
            do {
                try store.update { contents in
                    if let pinned = contents.pinnedSigningKey {
                        if pinned != answered { changed = pinned }
                    } else {
                        contents.pinnedSigningKey = answered
                    }
                }
            } catch { throw .invalidResponse("cannot pin the signing key: \(error)") }
            if let changed { throw .signingKeyChanged(pinned: changed, answered: answered) }
        }
    }

    /// Replaces a key pinned on first use (the app's own decision: the operator announced a new key).
    public func replace(with key: String) throws(HeraldClientError) {
        guard case .store(let store) = source else { return }
        do { try store.update { $0.pinnedSigningKey = key } } catch { throw .invalidResponse("cannot pin the signing key: \(error)") }
    }
}
