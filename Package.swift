// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Doppel",
    // What the sources need: `Atomic` (Synchronization) and
    // `String(validating:as:)` are macOS 15 / iOS 18 APIs. `.ci/run` checks
    // the sources against these with the toolchain's interface files
    // (`.ci/check-availability.py`).
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "DoppelCore", targets: ["DoppelCore"]),
        .library(name: "DoppelServer", targets: ["DoppelServer"]),
        .library(name: "DoppelTesting", targets: ["DoppelTesting"]),
        .library(name: "DoppelRunner", targets: ["DoppelRunner"]),
        .library(name: "DoppelOpenAPI", targets: ["DoppelOpenAPI"]),
        .executable(name: "doppel", targets: ["doppel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // HTTPS: TLS, and certificates made for local development.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // Without its ExternalLoading trait, which Doppel does not use and which builds much slower.
        .package(url: "https://github.com/mattpolzin/OpenAPIKit.git", from: "6.4.0", traits: []),
        // The shared state store of replicas (`doppel serve --state-store postgres://…`).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/GraphQLSwift/GraphQL.git", from: "4.3.0"),
        // HTTP/2 for gRPC, on the server's own port (Transport/PrefaceSniffer.swift, GRPCDoor.swift).
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .target(
            name: "DoppelCore",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "DoppelServer",
            dependencies: [
                "DoppelCore",
                "DoppelGraphQL",
                // gRPC's messages, converted by the contract's .proto.
                "DoppelProtobuf",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // WebSocket frames (see Sockets.swift for why not hummingbird-websocket's router).
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The upstream client of `doppel serve --proxy` (see Upstream.swift for why not AsyncHTTPClient).
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            // The dashboard (`/__doppel/ui/`): plain files, compiled into the
            // binary as bytes, so a release binary serves it with nothing beside it.
            resources: [
                .embedInCode("Dashboard/index.html"),
                .embedInCode("Dashboard/dashboard.css"),
                .embedInCode("Dashboard/dashboard.js"),
            ]
        ),
        .target(
            // Sessions and the journal on PostgreSQL, shared by replicas. Its
            // own target, so the core, the server and test suites that
            // import DoppelTesting link no database client.
            name: "DoppelPostgres",
            dependencies: [
                "DoppelCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The queue of reads and writes waiting for a round (PostgresStateStore+Rounds.swift).
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "DoppelOpenAPI",
            dependencies: [
                "DoppelCore",
                // A contract's GraphQL schema and gRPC .proto are checked with the rest of it.
                "DoppelGraphQL", "DoppelProtobuf",
                .product(name: "OpenAPIKit", package: "OpenAPIKit"),
                .product(name: "OpenAPIKit30", package: "OpenAPIKit"),
                .product(name: "OpenAPIKitCompat", package: "OpenAPIKit"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .target(
            // Doppel's tools for an agent over the Model Context Protocol (`doppel mcp`, `/__doppel/mcp`),
            // answered by AgentServer.swift (it says why not on the MCP Swift SDK).
            name: "DoppelMCP",
            // DoppelRunner: `run_scenario` runs a scenario's steps as `doppel run` does.
            dependencies: ["DoppelServer", "DoppelCore", "DoppelOpenAPI", "DoppelRunner"]
        ),
        .target(
            // A contract's `graphql:` section served: GraphQLSwift parses, validates and executes; the
            // contract's endpoints answer the fields (through the server's own path, a `ContractCaller`).
            name: "DoppelGraphQL",
            dependencies: [
                "DoppelCore", .product(name: "GraphQL", package: "GraphQL"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                // SHA-256 of automatic persisted queries (PersistedQueries.swift).
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            // gRPC's messages: `.proto` files read, and protobuf's binary format converted to and
            // from its JSON mapping by a codec driven by them (swift-protobuf has no dynamic
            // messages and no `.proto` parser). Plain Swift over DoppelCore: no dependency of its own.
            name: "DoppelProtobuf",
            dependencies: ["DoppelCore"]
        ),
        .target(
            name: "DoppelRunner",
            dependencies: [
                "DoppelServer",
                "DoppelCore",
                // `doppel verify` of a contract's GraphQL API (ProviderVerifier+GraphQL.swift).
                "DoppelGraphQL",
                // Test servers serve OpenAPI documents as `doppel serve` does.
                "DoppelOpenAPI",
                // Scenario gRPC steps: calls by the contract's `.proto` over HTTP/2 (GRPCClient.swift).
                "DoppelProtobuf",
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                // Scenario socket steps and DoppelTesting's sockets (WebSocketClient.swift).
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            // What a Swift test suite imports: test servers, sessions per test,
            // verification as test issues, a Swift Testing trait. It links
            // Testing and Foundation's URLSession, which the `doppel` binary
            // (on DoppelRunner) does not.
            name: "DoppelTesting",
            // DoppelProtobuf: a session's gRPC calls (DoppelSession+GRPC.swift).
            dependencies: ["DoppelRunner", "DoppelServer", "DoppelCore", "DoppelOpenAPI", "DoppelProtobuf"]
        ),
        .executableTarget(
            name: "doppel",
            dependencies: [
                "DoppelServer",
                // `doppel diff` of two .proto files.
                "DoppelProtobuf",
                "DoppelCore",
                "DoppelRunner",
                "DoppelOpenAPI",
                "DoppelPostgres",
                "DoppelMCP",
                "DoppelGraphQL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            // What the test targets share: not part of any product.
            name: "DoppelTestSupport",
            dependencies: [
                "DoppelCore", "DoppelRunner",
                // Loopback upstreams and providers of the proxy, record and verify tests.
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/DoppelTestSupport"
        ),
        .testTarget(
            name: "DoppelCoreTests",
            dependencies: ["DoppelCore", "DoppelTestSupport"]
        ),
        .testTarget(
            name: "DoppelOpenAPITests",
            dependencies: ["DoppelOpenAPI", "DoppelCore", "DoppelTestSupport", .product(name: "Yams", package: "Yams")],
            // Read from the source tree by the test that runs it.
            exclude: ["JSON-Schema-Test-Suite"]
        ),
        .testTarget(
            // Only DoppelTesting, as a package that depends on Doppel would have it.
            name: "DoppelTestingTests",
            dependencies: ["DoppelTesting"]
        ),
        .testTarget(
            name: "DoppelServerTests",
            dependencies: [
                "DoppelServer", "DoppelTesting", "DoppelCore", "DoppelOpenAPI", "DoppelRunner", "DoppelTestSupport",
                // The upstream server of the proxy tests.
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HTTPTypes", package: "swift-http-types"),
                // Clients of the HTTPS tests.
                .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // gRPC calls written as HTTP/2 frames into an embedded channel, their messages encoded by the .proto.
                "DoppelProtobuf", .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            // Read by path from the repository, not as a bundle resource.
            exclude: ["Fixtures"]
        ),
        .testTarget(
            // Scenario runs, provider verification and child processes.
            name: "DoppelRunnerTests",
            dependencies: [
                "DoppelRunner", "DoppelServer", "DoppelTesting", "DoppelCore", "DoppelOpenAPI", "DoppelTestSupport",
                // Providers of the verify tests.
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            // The `doppel` executable's commands, run as processes (it is built
            // with the tests: `swift build --build-tests` builds every product).
            name: "DoppelCommandLineTests",
            dependencies: [
                "DoppelServer", "DoppelTesting", "DoppelCore", "DoppelRunner", "DoppelTestSupport",
                // The HTTPS client of `serve --tls`.
                .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            // GraphQL over loopback, from the contract's section to the answer.
            name: "DoppelGraphQLTests",
            dependencies: [
                "DoppelGraphQL", "DoppelServer", "DoppelCore", "DoppelRunner", "DoppelTestSupport", .product(name: "GraphQL", package: "GraphQL"),
            ]
        ),
        .testTarget(
            // The .proto reader and the codec, held to Python's protobuf (grpcio-tools) by recorded cases.
            name: "DoppelProtobufTests",
            dependencies: ["DoppelProtobuf", "DoppelCore"],
            resources: [.copy("Cases")]
        ),
        .testTarget(
            // The MCP tools, called without a transport.
            name: "DoppelMCPTests",
            dependencies: [
                "DoppelMCP", "DoppelServer", "DoppelCore", "DoppelRunner", "DoppelTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            // Replicas sharing sessions on PostgreSQL (`DOPPEL_TEST_POSTGRES`: a database `.ci/postgres.sh` starts).
            name: "DoppelPostgresTests",
            dependencies: [
                "DoppelPostgres", "DoppelServer", "DoppelTesting", "DoppelCore", "DoppelOpenAPI", "DoppelRunner", "DoppelTestSupport", "DoppelMCP",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log"),
                // A database in the schema of an older Doppel, for the migration test.
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ]
)
