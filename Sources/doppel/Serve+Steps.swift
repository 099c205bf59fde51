import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import DoppelPostgres
import DoppelServer
import Foundation

/// The steps of `doppel serve` before it listens, each refusing with what
/// is wrong (and exit status 1).
extension Serve {
    /// The contract or OpenAPI document, served despite a document's own
    /// mistakes (printed as warnings). An OpenAPI document is served at
    /// once; OpenAPIKit's check of it (a second for 1,000 operations) runs
    /// beside the server and prints what it finds. `doppel lint` runs it
    /// before anything else.
    func loadContract() throws -> Contract {
        let contract: Contract
        if ScenarioLoader.kind(of: self.contract) == .scenario {
            let named = ScenarioCatalog.contractReference(of: URL(fileURLWithPath: self.contract)) ?? "its contract"
            printDiagnostics([
                Diagnostic(
                    at: SourceLocation(file: self.contract, line: 1, column: 1),
                    "\(self.contract) is a scenario, not a contract: run it with `doppel run \(self.contract)`, or serve its contract with it: `doppel serve \(named) --scenario \(self.contract)`"
                )
            ])
            throw ExitCode(1)
        }
        do {
            let loaded = try ContractDocument.loadDeferringCheck(file: self.contract)
            contract = loaded.contract
            // The document's own mistakes, served despite them: the first hundred, and how many more `doppel lint` lists.
            printDiagnostics(Array(contract.warnings.prefix(Self.warningsShown)))
            if contract.warnings.count > Self.warningsShown {
                FileHandle.standardError.write(
                    Data(
                        "\(self.contract): \(contract.warnings.count - Self.warningsShown) more warnings; doppel lint \(self.contract) lists them all\n"
                            .utf8))
            }
            if let check = loaded.check {
                Task.detached(priority: .background) {
                    printDiagnostics(check())
                    // The check's model of the document (tens of MB for a large one) is freed: handed back.
                    _ = GlibcHeap.trim?(0)
                }
            }
        } catch {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        return contract
    }

    /// HTTPS from `--tls-cert`/`--tls-key`, or from certificates made and
    /// kept for local development (`--tls`); what to tell the user about
    /// trusting them.
    func setUpTLS(_ configuration: inout ServerConfiguration) throws -> [String] {
        var trustNote: [String] = []
        do {
            if let tlsCert, let tlsKey {
                var status = stat()
                if stat(tlsKey, &status) == 0, Int(status.st_mode) & 0o077 != 0 {
                    FileHandle.standardError.write(
                        Data(
                            "doppel: warning: \(tlsKey) is readable by others (mode \(String(Int(status.st_mode) & 0o777, radix: 8))); chmod 600 it\n"
                                .utf8))
                }
                configuration.tls = try ServerConfiguration.tls(
                    certificatePEM: String(contentsOfFile: tlsCert, encoding: .utf8),
                    keyPEM: String(contentsOfFile: tlsKey, encoding: .utf8))
            } else if tls != nil {
                let folder =
                    tlsDir.map { URL(fileURLWithPath: $0) }
                    ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".doppel/tls")
                let files = LocalCertificates.Files(folder: folder)
                // Keys others could read are not left so: made readable by their owner only, and said.
                for loose in LocalCertificates.looseKeys(in: files) {
                    chmod(loose.path, 0o600)
                    FileHandle.standardError.write(
                        Data(
                            "doppel: warning: \(loose.path) was readable by others (mode \(String(loose.mode, radix: 8))); it is 0600 now. If others did read it, remove \(folder.path) to make new keys\n"
                                .utf8))
                }
                let (certificates, newAuthority) = try LocalCertificates.loadOrMake(in: files, names: LocalCertificates.machineNames())
                configuration.tls = try ServerConfiguration.tls(certificatePEM: certificates.certificatePEM, keyPEM: certificates.keyPEM)
                trustNote = Self.trustNote(files: files, names: certificates.names, newAuthority: newAuthority)
            }
        } catch {
            FileHandle.standardError.write(Data("doppel: cannot serve HTTPS: \(error)\n".utf8))
            throw ExitCode(1)
        }
        return trustNote
    }

    /// `--scenarios` and `--scenario`: the catalog, and the scenario every session starts from.
    func loadScenarios(for contract: Contract, engine: MockEngine) throws -> ScenarioCatalog {
        var catalog = ScenarioCatalog()
        do {
            if let scenarios { catalog = try ScenarioCatalog.load(directory: scenarios, contract: contract) }
            if let scenario {
                let loaded = try ScenarioLoader.load(file: scenario, contract: contract)
                guard
                    URL(fileURLWithPath: loaded.contractFile).standardizedFileURL.path == URL(fileURLWithPath: contract.file).standardizedFileURL.path
                else {
                    printDiagnostics([
                        Diagnostic(
                            at: SourceLocation(file: scenario, line: 1, column: 1),
                            "this scenario is for \(loaded.contractFile), not \(self.contract)")
                    ])
                    throw ExitCode(1)
                }
                catalog.add(loaded, as: loaded.name)
                engine.sessions.defaultScenario = loaded
            }
        } catch let error as ContractError {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        return catalog
    }

    /// The shared state store (`--state-store`), if any.
    func openStateStore(engine: MockEngine, catalog: ScenarioCatalog, timeout: Double) async throws -> PostgresStateStore? {
        var shared: PostgresStateStore?
        if let stateStore {
            var options = PostgresStateStore.Options(url: stateStore)
            options.namespace = stateNamespace
            options.timeout = timeout
            do {
                shared = try await PostgresStateStore.open(options, engine: engine, catalog: catalog)
                if let previous = shared?.tookOver {
                    FileHandle.standardError.write(
                        Data(
                            "doppel: the state store's namespace \(stateNamespace) served \(previous), a different file or version, and no replica serves it now: it passes to \(self.contract), and its sessions start over\n"
                                .utf8))
                }
            } catch {
                FileHandle.standardError.write(Data("doppel: \(error.description)\n".utf8))
                throw ExitCode(1)
            }
        }
        return shared
    }
}
