// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HeraldPushCore", targets: ["HeraldPushCore"]),
        .library(name: "HeraldAPNsCore", targets: ["HeraldAPNsCore"]),
        .library(name: "HeraldAPNs", targets: ["HeraldAPNs"]),
        .library(name: "HeraldFCMCore", targets: ["HeraldFCMCore"]),
        .library(name: "HeraldWebPushCore", targets: ["HeraldWebPushCore"]),
        .library(name: "HeraldFCM", targets: ["HeraldFCM"]),
        .library(name: "HeraldWebPush", targets: ["HeraldWebPush"]),
        .library(name: "HeraldWebPushSimulator", targets: ["HeraldWebPushSimulator"]),
        .library(name: "HeraldFCMSimulator", targets: ["HeraldFCMSimulator"]),
        .library(name: "HeraldAPNsSimulator", targets: ["HeraldAPNsSimulator"]),
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldMatrix", targets: ["HeraldMatrix"]),
        .library(name: "HeraldDelivery", targets: ["HeraldDelivery"]),
        .library(name: "HeraldPushService", targets: ["HeraldPushService"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        .library(name: "HeraldKaspa", targets: ["HeraldKaspa"]),
        .executable(name: "kasia", targets: ["KasiaCLI"]),
        .executable(name: "herald", targets: ["HeraldCLI"]),
        .executable(name: "herald-bench", targets: ["HeraldBench"]),
        .executable(name: "heraldkit-bench", targets: ["HeraldKitBench"]),
    ],
    dependencies: [
        // HeraldKit, KasiaProtocol and KasiaCrypto: the client package, with its own platforms (iOS 15, macOS 12).
        .package(path: "HeraldKit"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // What every push service and the HTTP/2 pool share, no NIO: transport failures,
        // configuration errors, Retry-After, ES256 JWTs, base64url, UUIDs, key files, the
        // credential ledger's values, a device's opaque service attributes.
        .target(name: "HeraldPushCore", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // APNs as values, no NIO: notification, push type, priority, token, validation rules,
        // reasons and their classification, the ES256 provider token.
        .target(
            name: "HeraldAPNsCore",
            dependencies: ["HeraldPushCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // HTTP/2 over TLS to a push service: one connection per handler, a pool that honours each
        // connection's live stream limit. APNs and FCM both send on it.
        .target(
            name: "HeraldHTTP2",
            dependencies: [
                "HeraldPushCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // FCM HTTP v1 as values, no NIO: the service account and its RS256 grant, the data-only
        // message, Google's error envelope and what each answer means.
        .target(
            name: "HeraldFCMCore",
            dependencies: ["HeraldPushCore", .product(name: "_CryptoExtras", package: "swift-crypto")]
        ),
        // Web Push as values, no NIO: subscription keys, VAPID, endpoints and the SSRF address
        // policy, the message's headers and what each push-service answer means.
        .target(name: "HeraldWebPushCore", dependencies: ["HeraldPushCore", .product(name: "Crypto", package: "swift-crypto"), .product(name: "WebPushCrypto", package: "HeraldKit")]),
        // The FCM transport: OAuth access tokens and messages:send on the HTTP/2 pool.
        .target(
            name: "HeraldFCM",
            dependencies: [
                "HeraldFCMCore", "HeraldHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                "HeraldPushCore",
            ]
        ),
        // The Web Push transport: HTTP/2 (on the shared pool) or HTTP/1.1 over TLS to many
        // push-service origins, each connection to an address the SSRF guard checked.
        .target(
            name: "HeraldWebPush",
            dependencies: [
                "HeraldWebPushCore", "HeraldHTTP2",
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                "HeraldPushCore",
            ]
        ),
        // What every push-service simulator shares: its TLS identity, its two listeners, its control calls.
        .target(
            name: "HeraldSimulatorSupport",
            dependencies: [
                "HeraldPushCore",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"), .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `herald mock-webpush`: a push service that hands out subscriptions, checks VAPID, decrypts
        // and records every message, with faults.
        .target(
            name: "HeraldWebPushSimulator",
            dependencies: [
                "HeraldWebPushCore", "HeraldSimulatorSupport", .product(name: "WebPushCrypto", package: "HeraldKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "HTTPTypes", package: "swift-http-types"), "HeraldPushCore", .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // `herald mock-fcm`: an FCM look-alike (OAuth grant checks, messages:send) with faults.
        .target(
            name: "HeraldFCMSimulator",
            dependencies: [
                "HeraldFCMCore", "HeraldSimulatorSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"), "HeraldPushCore", .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The APNs transport: the APNs client on the HTTP/2 pool.
        .target(
            name: "HeraldAPNs",
            dependencies: [
                "HeraldAPNsCore",
                "HeraldHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                "HeraldPushCore",
            ]
        ),
        // An APNs look-alike held to Apple's documented behaviour, with fault injection.
        .target(
            name: "HeraldAPNsSimulator",
            dependencies: [
                "HeraldAPNs",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                "HeraldAPNsCore", "HeraldPushCore", "HeraldSimulatorSupport",
            ]
        ),
        // `kasia`: decode and encrypt Kasia payloads when debugging pushes.
        .executableTarget(
            name: "KasiaCLI",
            dependencies: [.product(name: "KasiaCrypto", package: "HeraldKit"), .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // Herald's domain, no I/O: watch keys, device tokens, routing, events, push templates, the clock.
        .target(
            name: "HeraldCore",
            dependencies: [
                "HeraldPushCore", .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Durable state behind role protocols; SQLite (one file, WAL) and PostgreSQL implement them all.
        .target(
            name: "HeraldStore",
            dependencies: [
                "CHeraldSQLite", "HeraldCore", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "HeraldPushCore", .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // SQLite's process-wide settings, whose call (variadic C) Swift cannot make.
        .target(name: "CHeraldSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        // The Matrix Push Gateway API as values, no I/O: the notify body, the app_id map, pushkeys as
        // devices, and Sygnal-shaped payloads for APNs, FCM and Web Push.
        .target(name: "HeraldMatrix", dependencies: ["HeraldAPNsCore", "HeraldCore", "HeraldFCMCore", "HeraldPushCore", "HeraldWebPushCore", .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "WebPushCrypto", package: "HeraldKit")]),
        // The delivery core: the publish and registration use cases (`EventPublisher`,
        // `DeviceRegistrar`), the outbox lanes and the provider-neutral `PushProvider` seam.
        .target(
            name: "HeraldDelivery",
            dependencies: ["HeraldAPNsCore", "HeraldFCMCore", "HeraldWebPushCore",
                "HeraldCore", "HeraldStore", "HeraldMatrix",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Crypto", package: "swift-crypto"), "HeraldPushCore", .product(name: "KasiaProtocol", package: "HeraldKit"),
                .product(name: "KasiaCrypto", package: "HeraldKit"),
                .product(name: "PushSigning", package: "HeraldKit"), .product(name: "WebPushCrypto", package: "HeraldKit"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        // The seam every push service plugs into: `PushService` (token rule, settings, shared
        // state, provider and simulator factories, direct send) and its registry.
        .target(
            name: "HeraldPushService",
            dependencies: [
                "HeraldCore", "HeraldDelivery", "HeraldMatrix", "HeraldPushCore", "HeraldSimulatorSupport", "HeraldStore",
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Each push service in one module: its `PushService`, settings, `PushProvider` and direct send.
        .target(
            name: "HeraldAPNsService",
            dependencies: ["HeraldSimulatorSupport", 
                "HeraldAPNs", "HeraldAPNsCore", "HeraldAPNsSimulator", "HeraldCore", "HeraldDelivery", "HeraldMatrix", "HeraldPushCore", "HeraldPushService",
                "HeraldStore", .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "HeraldFCMService",
            dependencies: ["HeraldAPNsCore", "HeraldSimulatorSupport", 
                "HeraldCore", "HeraldDelivery", "HeraldFCM", "HeraldFCMCore", "HeraldFCMSimulator", "HeraldMatrix", "HeraldPushCore", "HeraldPushService", "HeraldStore",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "HeraldWebPushService",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), "HeraldAPNsCore", "HeraldSimulatorSupport", 
                "HeraldCore", "HeraldDelivery", "HeraldMatrix", "HeraldPushCore", "HeraldPushService", "HeraldStore", "HeraldWebPush", "HeraldWebPushCore", .product(name: "WebPushCrypto", package: "HeraldKit"),
                "HeraldWebPushSimulator", .product(name: "Logging", package: "swift-log"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Reading Kasia off a Kaspa node: its RPC JSON and the classification into Kasia events.
        .target(
            name: "HeraldKaspa",
            dependencies: [
                "HeraldCore", "HeraldPushCore", "HeraldStore", .product(name: "KasiaProtocol", package: "HeraldKit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // A Kaspa node look-alike speaking wRPC JSON, fed with transactions (tests and benchmarks).
        .target(
            name: "KaspaNodeSimulator",
            dependencies: [
                "HeraldKaspa",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The HTTP API (Hummingbird 2): routes, middleware and encoding over the delivery core.
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldDelivery", "HeraldMatrix", .product(name: "KasiaCrypto", package: "HeraldKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                "HeraldPushCore", .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            // The OpenAPI document, compiled into the binary: a static `herald` has no bundle beside it.
            resources: [.embedInCode("Resources/openapi.json"), .embedInCode("Resources/openapi-matrix.json")]
        ),
        // The composition root: `herald serve`'s settings (environment and HERALD_CONFIG) and
        // `buildApplication(settings:pushServices:store:…)`, every part wired into one ServiceGroup.
        .target(
            name: "HeraldApp",
            dependencies: [.product(name: "UnixSignals", package: "swift-service-lifecycle"), 
                "HeraldAPNsService", "HeraldCore", "HeraldDelivery", "HeraldFCMService", "HeraldKaspa", "HeraldMatrix", "HeraldPushCore",
                "HeraldPushService", "HeraldServer", "HeraldSimulatorSupport", "HeraldStore", "HeraldWebPushService",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "KasiaProtocol", package: "HeraldKit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // The `herald` command.
        .executableTarget(
            name: "HeraldCLI",
            dependencies: ["HeraldSimulatorSupport", 
                "HeraldApp", "HeraldAPNsSimulator", "HeraldCore", "HeraldDelivery", "HeraldFCM", "HeraldFCMCore", "HeraldFCMSimulator", "HeraldHTTP2", "HeraldPushCore",
                "HeraldPushService", "HeraldServer", "HeraldStore", "HeraldWebPushCore", "HeraldWebPushSimulator",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            plugins: ["BuildInfo"]
        ),
        // `herald version`'s commit, from git at build time.
        .plugin(name: "BuildInfo", capability: .buildTool()),
        // `herald-bench`: the gateway's benchmarks (Benchmarks/README.md).
        .executableTarget(
            name: "HeraldBench",
            dependencies: ["HeraldAPNsCore", .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"), 
                "HeraldWebPushService",
                "HeraldAPNsSimulator", "HeraldCore", "HeraldStore", "HeraldKaspa", "KaspaNodeSimulator", "HeraldDelivery",
                "HeraldWebPush",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                "HeraldPushCore", "HeraldWebPushCore", .product(name: "WebPushCrypto", package: "HeraldKit"), .product(name: "KasiaProtocol", package: "HeraldKit"),
                .product(name: "PushSigning", package: "HeraldKit"),
            ],
            path: "Benchmarks/HeraldBench"
        ),
        // `heraldkit-bench`: HeraldKit's hot paths (README → Performance).
        .executableTarget(
            name: "HeraldKitBench",
            dependencies: [
                .product(name: "HeraldKit", package: "HeraldKit"), .product(name: "PushSigning", package: "HeraldKit"),
                .product(name: "WebPushCrypto", package: "HeraldKit"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/HeraldKitBench"),
        .testTarget(
            name: "HeraldAPNsTests",
            dependencies: [
                "HeraldAPNs", "HeraldHTTP2", "HeraldTestSupport", "HeraldSimulatorSupport",
                "HeraldAPNsSimulator",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                "HeraldAPNsCore", "HeraldPushCore", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Tests that start the `herald` binary as separate processes.
        .testTarget(
            name: "HeraldEndToEndTests", dependencies: ["HeraldAPNsCore", "HeraldCLI", "HeraldStore", "HeraldCore", "HeraldFCMCore", "HeraldPushCore", "HeraldWebPushCore", "HeraldTestSupport", "KaspaNodeSimulator", .product(name: "Logging", package: "swift-log")]),
        // `herald serve`'s settings and composition root, in-process.
        .testTarget(
            name: "HeraldAppTests",
            dependencies: ["HeraldAPNsCore", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), 
                "HeraldApp", "HeraldCore", "HeraldDelivery", "HeraldPushCore", "HeraldPushService", "HeraldSimulatorSupport", "HeraldStore", "HeraldTestSupport",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldPushCore", "HeraldAPNs", "HeraldAPNsCore", "HeraldAPNsService", "HeraldFCMCore", "HeraldWebPushCore", .product(name: "KasiaProtocol", package: "HeraldKit")]),
        .testTarget(name: "HeraldMatrixTests", dependencies: ["HeraldAPNsCore", "HeraldMatrix", "HeraldCore", "HeraldFCMCore", "HeraldPushCore"]),
        .testTarget(
            name: "HeraldFCMTests",
            dependencies: ["HeraldSimulatorSupport", "HeraldFCMService", "HeraldFCM", "HeraldFCMCore", "HeraldFCMSimulator", "HeraldDelivery", "HeraldStore", "HeraldCore", "HeraldPushCore", .product(name: "HeraldKit", package: "HeraldKit"), "HeraldTestSupport", .product(name: "NIOPosix", package: "swift-nio")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "HeraldWebPushTests",
            dependencies: ["HeraldAPNsCore", "HeraldSimulatorSupport", .product(name: "NIOCore", package: "swift-nio"), 
                "HeraldWebPushService",
                "HeraldWebPushCore", "HeraldWebPush", "HeraldWebPushSimulator", "HeraldDelivery", "HeraldStore", "HeraldCore", .product(name: "HeraldKit", package: "HeraldKit"), .product(name: "WebPushCrypto", package: "HeraldKit"),
                "HeraldTestSupport", .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOPosix", package: "swift-nio"),
                "HeraldPushCore",
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "HeraldKaspaTests",
            dependencies: ["HeraldAPNsCore", "HeraldKaspa", "HeraldCore", "HeraldPushCore", "HeraldStore", .product(name: "HeraldKit", package: "HeraldKit"), "KaspaNodeSimulator", "HeraldTestSupport", .product(name: "KasiaProtocol", package: "HeraldKit")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "HeraldKitTests",
            dependencies: ["HeraldAPNsCore", 
                .product(name: "HeraldKit", package: "HeraldKit"), .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "KasiaCrypto", package: "HeraldKit"),
                "HeraldTestSupport", "HeraldPushCore", "HeraldWebPushCore", .product(name: "WebPushCrypto", package: "HeraldKit"),
                .product(name: "PushSigning", package: "HeraldKit"), "HeraldCore", "HeraldDelivery", "HeraldStore",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Fixtures", "Web"]
        ),
        // Writes to a HeraldKit shared store from a second process (the cross-process test).
        // An end-to-end encrypted messenger's use of HeraldKit without Kasia (push_keys, the pinned
        // signing key, PushAuthenticator), run by HeraldEndToEndTests' MessengerExampleTests.
        .executableTarget(name: "MessengerExample", dependencies: [.product(name: "HeraldKit", package: "HeraldKit")], path: "Examples/Messenger"),
        .executableTarget(name: "SharedStoreWriter", dependencies: [.product(name: "HeraldKit", package: "HeraldKit")], path: "Tests/SharedStoreWriter"),
        // Test helpers shared by test targets: fresh PostgreSQL databases.
        .target(
            name: "HeraldTestSupport",
            dependencies: [
                "HeraldCore", "HeraldStore", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/HeraldTestSupport"
        ),
        // The delivery core on an in-memory queue, a scripted provider and a manual clock.
        .testTarget(
            name: "HeraldDeliveryTests",
            dependencies: ["HeraldAPNsCore", .product(name: "Logging", package: "swift-log"), .product(name: "KasiaProtocol", package: "HeraldKit"),
                "HeraldDelivery", "HeraldServer", "HeraldStore", "HeraldCore", "HeraldPushCore", "HeraldTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .testTarget(name: "HeraldStoreTests", dependencies: [.product(name: "Crypto", package: "swift-crypto"), "HeraldStore", "HeraldPushCore", "HeraldFCMCore", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"), "HeraldCore", "HeraldAPNs", "HeraldFCM", "HeraldTestSupport", "HeraldAPNsCore", "HeraldWebPushCore", .product(name: "KasiaProtocol", package: "HeraldKit")]),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                "HeraldAPNsService", "HeraldFCMService", "HeraldWebPushService",
                "HeraldWebPush",
                "HeraldServer", "HeraldDelivery", "HeraldStore", "HeraldCore", "HeraldAPNs", "HeraldAPNsSimulator", "HeraldTestSupport",
                "HeraldMatrix", .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "HeraldAPNsCore", "HeraldPushCore", "HeraldWebPushCore", "HeraldFCMCore", .product(name: "KasiaProtocol", package: "HeraldKit"), .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
    ]
)

// The compiler keeps the map, as Hummingbird's manifest does: an existential is spelled `any`,
// a file sees only the members of modules it imports itself, and an import is internal unless the
// file's public API shows that module's types (`public import`).
for target in package.targets where target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"), .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
