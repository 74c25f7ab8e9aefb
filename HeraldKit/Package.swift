// swift-tools-version:6.0
import PackageDescription

// HeraldKit: the client half apps and their notification extensions embed (docs/heraldkit.md), a package
// of its own so that it declares its own platforms: the server's `macOS 15` (Synchronization) is
// not what an iOS 15 app or a notification extension has. Herald's server package uses
// KasiaProtocol and KasiaCrypto from here.
let package = Package(
    name: "HeraldKit",
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "HeraldKit", targets: ["HeraldKit"]),
        .library(name: "KasiaProtocol", targets: ["KasiaProtocol"]),
        .library(name: "KasiaCrypto", targets: ["KasiaCrypto"]),
        .library(name: "WebPushCrypto", targets: ["WebPushCrypto"]),
        .library(name: "PushSigning", targets: ["PushSigning"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0")
    ],
    targets: [
        // Kaspa addresses and Kasia's on-chain formats, pure Swift: shared by the gateway and HeraldKit.
        .target(name: "KasiaProtocol"),
        // libsecp256k1 from Debian's libsecp256k1-dev (HeraldKit's default curve on Linux).
        .systemLibrary(name: "CSecp256k1", pkgConfig: "libsecp256k1", providers: [.apt(["libsecp256k1-dev"])]),
        // The Kasia cipher (secp256k1 ECDH, HKDF-SHA256, ChaCha20-Poly1305), without Foundation:
        // small enough for a notification extension.
        .target(
            name: "KasiaCrypto",
            dependencies: [
                "KasiaProtocol",
                .target(name: "CSecp256k1", condition: .when(platforms: [.linux])),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // RFC 8291 message encryption (aes128gcm): Herald's Web Push encrypts with it, HeraldKit
        // opens sealed pushes with it.
        .target(name: "WebPushCrypto", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Signed pushes (Ed25519 over a push document and its issue time): Herald signs, HeraldKit verifies.
        .target(name: "PushSigning", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // The client library: registration, decoding and decrypting pushes, reliability, polling.
        .target(name: "HeraldKit", dependencies: ["KasiaProtocol", "KasiaCrypto", "WebPushCrypto", "PushSigning", .product(name: "Crypto", package: "swift-crypto")]),
        // HeraldKit's own tests, no server needed: `swift test` in this folder, as an app that adds
        // HeraldKit runs them. Those against `herald serve` are the gateway's `HeraldKitTests`.
        .testTarget(name: "HeraldKitUnitTests", dependencies: ["HeraldKit", "KasiaProtocol"]),
    ]
)

// The compiler keeps the map, as in Herald's manifest: an existential is spelled `any`, a file
// sees only the members of modules it imports itself, and an import is internal unless the
// file's public API shows that module's types (`public import`).
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"), .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
