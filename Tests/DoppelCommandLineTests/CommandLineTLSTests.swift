import AsyncHTTPClient
import DoppelServer
import DoppelTestSupport
import Foundation
import NIOCore
import NIOSSL
import Testing

extension CommandLineTests {
    @Test func serveWithASelfSignedCertificateSaysHowToTrustIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let served = try await DoppelCommand.serve(["contracts/tales.yaml", "--tls", "self-signed", "--tls-dir", folder.path, "--log-format", "none"])
        defer { served.process.terminate() }
        let authority = folder.appendingPathComponent("doppel-ca.pem").path
        #expect(served.banner.contains("Listening on https://127.0.0.1:\(served.port)"))
        #expect(served.banner.contains("xcrun simctl keychain booted add-root-cert \(authority)"))

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(authority)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        defer { _ = client.shutdown() }
        let response = try await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(served.port)/__doppel/health"), timeout: .seconds(5))
        #expect(response.status.code == 200)

        let mismatched = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--tls-cert", authority])
        #expect(mismatched.status == 64)
        #expect(mismatched.errors.contains("--tls-cert and --tls-key go together"))

        // Certificate and key swapped: said in those words.
        let key = folder.appendingPathComponent("server-key.pem").path
        let certificate = folder.appendingPathComponent("server.pem").path
        let swapped = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--port", "0", "--tls-cert", key, "--tls-key", certificate])
        #expect(swapped.status == 1)
        #expect(swapped.errors.contains("--tls-cert holds a private key and --tls-key a certificate: swap them"), "\(swapped.errors)")
    }

    @Test func keyFilesAreNeverReadableByOthers() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-mode-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Written with a permissive umask, a key is still 0600 from its creation.
        let old = umask(0)
        defer { umask(old) }
        let files = LocalCertificates.Files(folder: folder)
        _ = try LocalCertificates.loadOrMake(in: files, names: ["localhost"])
        for (path, mode) in [(files.key.path, 0o600), (files.certificate.path, 0o644)] {
            let actual = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
            #expect(actual?.intValue == mode, "\(path)")
        }
        // A key loosened since is tightened when served, and said so.
        chmod(files.key.path, 0o644)
        #expect(LocalCertificates.looseKeys(in: files).map(\.path) == [files.key.path])
        let served = try await DoppelCommand.serve(["contracts/tales.yaml", "--tls", "self-signed", "--tls-dir", folder.path, "--log-format", "none"])
        defer { served.process.terminate() }
        #expect(LocalCertificates.looseKeys(in: files).isEmpty)
        let mode = try FileManager.default.attributesOfItem(atPath: files.key.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }
}
