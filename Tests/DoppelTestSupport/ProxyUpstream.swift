import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The upstream of the proxy and record tests (a small Hummingbird app): a thing, an echo of what reached it, and a slow answer.
package struct ProxyUpstream {
    package let url: URL
    package let task: Task<Void, any Error>

    package static func start() async throws -> ProxyUpstream {
        let router = Router()
        router.get("/api/things/{id}") { _, context -> Response in
            let id = context.parameters.get("id") ?? "?"
            // Spacing of its own, so byte-for-byte means something.
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[HTTPField.Name("X-Upstream")!] = "yes"
            return Response(
                status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "{ \"id\" : \(id),\n  \"from\": \"upstream\" }")))
        }
        router.post("/api/echo") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let seen =
                "\(request.method) \(request.uri.path)?\(request.uri.query ?? "") auth=\(request.headers[.authorization] ?? "-") type=\(request.headers[.contentType] ?? "-") body=\(String(buffer: body))"
            return Response(status: .created, body: .init(byteBuffer: ByteBuffer(string: seen)))
        }
        router.get("/api/slow") { _, _ -> String in
            try await Task.sleep(for: .seconds(5))
            return "late"
        }
        let (port, task) = try await startLoopbackApp(router)
        return ProxyUpstream(url: URL(string: "http://127.0.0.1:\(port)/api")!, task: task)
    }

    package func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
