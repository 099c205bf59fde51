/// A contract's `grpc:` section: the `.proto` file its services are read
/// from and the methods the contract answers, each an endpoint whose id is
/// the method's path (`tales.v1.Tales/GenerateStory`).
///
/// The core reads no `.proto`: the section's methods are rewritten into
/// endpoints (`ContractLoader+GRPC.swift`), and DoppelProtobuf reads the file,
/// checks the methods against it and converts each message between protobuf
/// and the JSON the endpoints are written in.
package struct GRPCDefinition: Sendable {
    /// A method the contract answers.
    package struct Method: Sendable {
        /// The service's fully qualified name (`tales.v1.Tales`).
        package let service: String
        package let name: String
        /// Where the contract names it.
        package let location: SourceLocation
        /// `SERVICE/METHOD`: the endpoint's id, and its path after a `/`.
        package var path: String { service + "/" + name }
    }

    /// The `.proto` file, relative to the contract's folder (its imports are too).
    package let proto: String
    /// Where `proto` is written.
    package let protoLocation: SourceLocation
    /// The contract's folder, which every `.proto` file it reads must be inside.
    package let folder: String
    package let methods: [Method]
    /// The rules of the methods that answer each message as it comes (`stream:`), by `SERVICE/METHOD`.
    package var streams: [String: SocketDefinition] = [:]

    package init(proto: String, protoLocation: SourceLocation, folder: String, methods: [Method]) {
        self.proto = proto
        self.protoLocation = protoLocation
        self.folder = folder
        self.methods = methods
    }

    /// gRPC's status codes by name, and the HTTP status each is covered and
    /// forced by (Google's API design guide's table; `CANCELLED` 499 as there).
    package static let codes: [(name: String, code: Int, http: Int)] = [
        ("OK", 0, 200), ("CANCELLED", 1, 499), ("UNKNOWN", 2, 500), ("INVALID_ARGUMENT", 3, 400), ("DEADLINE_EXCEEDED", 4, 504),
        ("NOT_FOUND", 5, 404), ("ALREADY_EXISTS", 6, 409), ("PERMISSION_DENIED", 7, 403), ("RESOURCE_EXHAUSTED", 8, 429),
        ("FAILED_PRECONDITION", 9, 400), ("ABORTED", 10, 409), ("OUT_OF_RANGE", 11, 400), ("UNIMPLEMENTED", 12, 501),
        ("INTERNAL", 13, 500), ("UNAVAILABLE", 14, 503), ("DATA_LOSS", 15, 500), ("UNAUTHENTICATED", 16, 401),
    ]

    /// The gRPC status of an answer that says none of its own (one of
    /// Doppel's problems, an HTTP endpoint's fallback): from its HTTP status.
    package static func code(forHTTP status: Int) -> Int {
        switch status {
        case 200..<300: 0
        case 400, 422: 3
        case 401: 16
        case 403: 7
        case 404, 405, 501: 12
        case 408, 504: 4
        case 409: 10
        case 413, 429: 8
        case 499: 1
        case 502, 503: 14
        case 500: 13
        default: 2
        }
    }
}
