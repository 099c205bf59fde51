import AsyncHTTPClient
import DoppelTestSupport
import DoppelTesting
import Foundation
import NIOCore
import NIOSSL
import Testing

/// HTTPS: a client that trusts Doppel's local authority gets its answers;
/// one that does not gets a TLS error, not a hang.
@Suite struct TLSTests {
    func serve(_ certificates: LocalCertificates) async throws -> DoppelTestServer {
        var configuration = ServerConfiguration.testing
        configuration.tls = try ServerConfiguration.tls(certificatePEM: certificates.certificatePEM, keyPEM: certificates.keyPEM)
        let contract = try ContractLoader.load(file: repositoryRoot.appendingPathComponent("contracts/tales.yaml").path)
        return try await DoppelTestServer.start(engine: MockEngine(contract: contract, configuration: configuration), configuration: configuration)
    }

    func client(trusting authorityPEM: String?) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authorityPEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(authorityPEM.utf8)))
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(5))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    @Test func aClientThatTrustsTheAuthorityGetsAnswersAndOneThatDoesNotAnError() async throws {
        let certificates = try LocalCertificates.make(names: ["localhost", "127.0.0.1"])
        let server = try await serve(certificates)
        defer { Task { await server.stop() } }
        #expect(server.baseURL.absoluteString.hasPrefix("https://127.0.0.1:"))

        let trusting = try client(trusting: certificates.authorityPEM)
        defer { _ = trusting.shutdown() }
        let response = try await trusting.execute(
            HTTPClientRequest(url: server.url("/api/v1/free-stories?language=en").absoluteString), timeout: .seconds(5))
        #expect(response.status.code == 200)
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect(String(buffer: body).contains("\"language\":\"en\""))
        #expect(server.engine.journal.entries.last?.status == 200)

        // URLSession (libcurl here) reports the failed handshake, by name:
        // a handshake that hung would end in the client's timeout instead.
        // (AsyncHTTPClient would retry the connection until its deadline.)
        let doubting = TestClient(base: server.baseURL, timeout: 10)
        await #expect {
            _ = try await doubting.send("GET", "/api/v1/free-stories", token: nil)
        } throws: { error in
            "\(error)".contains("SSL certificate problem: unable to get local issuer certificate")
        }
        // A plain HTTP request to the HTTPS port is refused too, and the server serves on.
        let plain = TestClient(base: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: 5)
        let answered = server.engine.journal.entries.count
        await #expect(throws: (any Error).self) {
            _ = try await plain.send("GET", "/api/v1/free-stories", token: nil)
        }
        #expect(server.engine.journal.entries.count == answered, "a plain request to the HTTPS port reached the contract")
        let again = try await trusting.execute(HTTPClientRequest(url: server.url("/api/v1/free-stories").absoluteString), timeout: .seconds(5))
        #expect(again.status.code == 200)
    }

    @Test func theAuthorityIsKeptAndTheServerCertificateMadeAgainForNewNames() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = LocalCertificates.Files(folder: folder)
        let first = try LocalCertificates.loadOrMake(in: files, names: ["localhost", "127.0.0.1"])
        #expect(first.newAuthority)
        let keyMode = try FileManager.default.attributesOfItem(atPath: files.key.path)[.posixPermissions] as? NSNumber
        #expect(keyMode?.intValue == 0o600)

        let again = try LocalCertificates.loadOrMake(in: files, names: ["localhost"])
        #expect(!again.newAuthority)
        #expect(again.certificates.certificatePEM == first.certificates.certificatePEM)

        let wider = try LocalCertificates.loadOrMake(in: files, names: ["localhost", "127.0.0.1", "devbox.local"])
        #expect(!wider.newAuthority)
        #expect(wider.certificates.authorityPEM == first.certificates.authorityPEM)
        #expect(wider.certificates.certificatePEM != first.certificates.certificatePEM)
    }
}
