import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates for serving HTTPS on a development machine
/// (`doppel serve --tls self-signed`): a certificate authority of Doppel's
/// own, which a person trusts once (on the Mac, a simulator or a phone), and
/// a server certificate it signs for localhost and this machine's names. As
/// mkcert does: trusting the authority, not each server certificate, keeps
/// the trust when the server certificate is made again for other names.
public struct LocalCertificates: Sendable {
    /// The authority's certificate, the one to trust.
    public let authorityPEM: String
    /// The server's certificate, signed by the authority.
    public let certificatePEM: String
    /// The server certificate's private key.
    public let keyPEM: String
    /// The names the server certificate is for: host names and IP addresses.
    public let names: [String]

    /// How long the server certificate is valid: under the 398 days clients accept.
    static let serverValidity: TimeInterval = 397 * 86400
    static let authorityValidity: TimeInterval = 10 * 365 * 86400

    /// localhost, the loopback addresses and this machine's host name (and its `.local` name).
    package static func machineNames() -> [String] {
        var names = ["localhost", "127.0.0.1", "::1"]
        let host = ProcessInfo.processInfo.hostName.lowercased()
        if !host.isEmpty, host != "localhost" {
            names.append(host)
            if !host.contains(".") { names.append(host + ".local") }
        }
        return names
    }

    /// A new authority and a server certificate for `names`.
    public static func make(names: [String], now: Date = Date()) throws -> LocalCertificates {
        try make(names: names, now: now, authorityKey: P256.Signing.PrivateKey())
    }

    /// A server certificate for `names`, signed by `authority`.
    static func issue(
        names: [String], authority: Certificate, authorityPEM: String, authorityKey: P256.Signing.PrivateKey,
        now: Date
    ) throws -> LocalCertificates {
        let key = P256.Signing.PrivateKey()
        let alternativeNames = names.map { name -> GeneralName in
            if let address = Self.addressBytes(name) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(address))) }
            return .dnsName(name)
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(serverValidity),
            issuer: authority.subject,
            subject: try DistinguishedName {
                OrganizationName("Doppel")
                CommonName(names.first ?? "localhost")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternativeNames)
            },
            issuerPrivateKey: .init(authorityKey))
        return LocalCertificates(
            authorityPEM: authorityPEM, certificatePEM: try certificate.serializeAsPEM().pemString,
            keyPEM: key.pemRepresentation, names: names)
    }

    /// The files in `folder`: the authority (`doppel-ca.pem`, trusted by a
    /// person, and its key), and the server certificate and key.
    package struct Files: Sendable {
        package let folder: URL
        package var authority: URL { folder.appendingPathComponent("doppel-ca.pem") }
        var authorityKey: URL { folder.appendingPathComponent("doppel-ca-key.pem") }
        package var certificate: URL { folder.appendingPathComponent("server.pem") }
        package var key: URL { folder.appendingPathComponent("server-key.pem") }

        package init(folder: URL) {
            self.folder = folder
        }
    }

    /// The certificates kept in `folder`, made there when missing: the
    /// authority is kept as long as it is valid (so it stays trusted); the
    /// server certificate is made again when it does not name all of
    /// `names` or ends within 30 days. Keys are written readable by their
    /// owner only. `made` says whether a new authority was made.
    package static func loadOrMake(
        in files: Files, names: [String], now: Date = Date()
    ) throws -> (certificates: LocalCertificates, newAuthority: Bool) {
        try FileManager.default.createDirectory(at: files.folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        func read(_ url: URL) -> String? { try? String(contentsOf: url, encoding: .utf8) }
        if let authorityPEM = read(files.authority), let authorityKeyPEM = read(files.authorityKey),
            let authority = try? Certificate(pemEncoded: authorityPEM), authority.notValidAfter > now.addingTimeInterval(30 * 86400),
            let authorityKey = try? P256.Signing.PrivateKey(pemRepresentation: authorityKeyPEM)
        {
            if let certificatePEM = read(files.certificate), let keyPEM = read(files.key),
                let certificate = try? Certificate(pemEncoded: certificatePEM),
                certificate.notValidAfter > now.addingTimeInterval(30 * 86400), certificate.issuer == authority.subject,
                Set(names).isSubset(of: Self.names(of: certificate))
            {
                return (LocalCertificates(authorityPEM: authorityPEM, certificatePEM: certificatePEM, keyPEM: keyPEM, names: names), false)
            }
            let issued = try issue(names: names, authority: authority, authorityPEM: authorityPEM, authorityKey: authorityKey, now: now)
            try save(issued.certificatePEM, to: files.certificate, secret: false)
            try save(issued.keyPEM, to: files.key, secret: true)
            return (issued, false)
        }
        // A new authority: its key is needed to issue later server certificates under it.
        let authorityKey = P256.Signing.PrivateKey()
        let made = try make(names: names, now: now, authorityKey: authorityKey)
        try save(made.authorityPEM, to: files.authority, secret: false)
        try save(authorityKey.pemRepresentation, to: files.authorityKey, secret: true)
        try save(made.certificatePEM, to: files.certificate, secret: false)
        try save(made.keyPEM, to: files.key, secret: true)
        return (made, true)
    }

    /// `make(names:)` with the authority's key given.
    static func make(names: [String], now: Date, authorityKey: P256.Signing.PrivateKey) throws -> LocalCertificates {
        let authorityName = try DistinguishedName {
            OrganizationName("Doppel")
            CommonName("Doppel local development CA")
        }
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(authorityKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(authorityValidity),
            issuer: authorityName, subject: authorityName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(authorityKey))
        return try issue(
            names: names, authority: authority, authorityPEM: try authority.serializeAsPEM().pemString, authorityKey: authorityKey, now: now)
    }

    /// The host names and addresses a certificate is for.
    static func names(of certificate: Certificate) -> Set<String> {
        var names: Set<String> = []
        for name in (try? certificate.extensions.subjectAlternativeNames) ?? SubjectAlternativeNames() {
            switch name {
            case .dnsName(let text): names.insert(text.lowercased())
            case .ipAddress(let octets): if let text = Self.addressText(Array(octets.bytes)) { names.insert(text) }
            default: break
            }
        }
        return names
    }

    /// Writes a file whole, by a new file renamed over the old: a key's file
    /// is created with mode 0600, so its bytes are never readable by others,
    /// not even between writing and a chmod.
    static func save(_ text: String, to url: URL, secret: Bool) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, secret ? 0o600 : 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: temporary.path]) }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else {
                close(fd)
                unlink(temporary.path)
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
            }
            written += n
        }
        fchmod(fd, secret ? 0o600 : 0o644)  // the umask may have taken bits from a certificate's mode
        close(fd)
        guard rename(temporary.path, url.path) == 0 else {
            unlink(temporary.path)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }

    /// Key files that others can read: a file's path and its mode.
    package static func looseKeys(in files: Files) -> [(path: String, mode: Int)] {
        [files.key, files.authorityKey].compactMap { url in
            var status = stat()
            guard stat(url.path, &status) == 0 else { return nil }
            let mode = Int(status.st_mode) & 0o777
            return mode & 0o077 != 0 ? (url.path, mode) : nil
        }
    }

    /// The bytes of an IPv4 or IPv6 address written as text; nil for a host name.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func addressText(_ bytes: [UInt8]) -> String? {
        let family = bytes.count == 4 ? AF_INET : bytes.count == 16 ? AF_INET6 : -1
        guard family >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        let ok = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil }
        guard ok else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
