import DoppelCore
import Foundation

/// The services Doppel answers itself on every gRPC contract, whatever the
/// contract says, so that standard tools find their way: server reflection
/// (v1 and v1alpha: grpcurl, Postman, `grpcio-reflection` list the services
/// and call them knowing no `.proto`) and health (`grpc.health.v1`: every
/// service the `.proto` declares is `SERVING`).
extension GRPCCatalog {
    package enum OwnService: Sendable {
        case reflection
        case healthCheck
        case healthWatch
    }

    /// The service of Doppel's own that answers `path`, if any.
    package static func ownService(_ path: String) -> OwnService? {
        switch path {
        case "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo":
            .reflection
        case "/grpc.health.v1.Health/Check": .healthCheck
        case "/grpc.health.v1.Health/Watch": .healthWatch
        default: nil
        }
    }

    /// Which file declares each symbol: services, their methods (`SERVICE.METHOD`), messages and enums.
    static func symbols(of schema: ProtoSchema) -> [String: String] {
        var symbols: [String: String] = [:]
        for file in schema.files.values {
            for name in file.messages + file.enums + file.services { symbols[name] = file.name }
        }
        for service in schema.services {
            for method in service.methods { symbols[service.name + "." + method.name] = symbols[service.name] }
        }
        return symbols
    }

    /// The reflection service's answer to one `ServerReflectionRequest` (as JSON, either version's).
    package func reflect(_ request: JSON) -> JSON {
        var answer = JSONObject()
        answer["validHost"] = request["host"] ?? .string("")
        answer["originalRequest"] = request
        func failure(_ code: Int, _ message: String) {
            answer["errorResponse"] = ["errorCode": .int(code), "errorMessage": .string(message)]
        }
        if let name = request["fileByFilename"]?.stringValue {
            if codec.schema.files[name] != nil {
                answer["fileDescriptorResponse"] = descriptors(of: name)
            } else {
                failure(5, "File not found: \(name)")
            }
        } else if let symbol = request["fileContainingSymbol"]?.stringValue {
            if let file = symbols[symbol] {
                answer["fileDescriptorResponse"] = descriptors(of: file)
            } else {
                failure(5, "Symbol not found: \(symbol)")
            }
        } else if request["listServices"] != nil {
            answer["listServicesResponse"] = ["service": .array(services.map { ["name": .string($0)] })]
        } else if let type = request["allExtensionNumbersOfType"]?.stringValue {
            // The `.proto` reader reads past extensions: a message has none to list.
            if codec.schema.messages[type] != nil {
                answer["allExtensionNumbersResponse"] = ["baseTypeName": .string(type), "extensionNumber": []]
            } else {
                failure(5, "Type not found: \(type)")
            }
        } else if request["fileContainingExtension"] != nil {
            failure(5, "Extensions are not served")
        } else {
            failure(3, "The request names nothing to reflect on")
        }
        return .object(answer)
    }

    /// A file's descriptor and those of every file it imports, each once, as reflection sends them.
    private func descriptors(of name: String) -> JSON {
        var order: [String] = []
        var waiting = [name]
        while let next = waiting.popLast() {
            guard !order.contains(next), let file = codec.schema.files[next] else { continue }
            order.append(next)
            waiting += file.dependencies
        }
        let encoded = order.compactMap { FileDescriptors.encode($0, in: codec.schema) }.map { JSON.string(Data($0).base64EncodedString()) }
        return ["fileDescriptorProto": .array(encoded)]
    }

    /// The health of `service` (`HealthCheckRequest`'s): every service the
    /// `.proto` declares is `SERVING`, and so is the server (""); nil for an unknown one.
    package func health(_ request: JSON) -> JSON? {
        let service = request["service"]?.stringValue ?? ""
        guard service.isEmpty || services.contains(service) else { return nil }
        return ["status": "SERVING"]
    }
}
