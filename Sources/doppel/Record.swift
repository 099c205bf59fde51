import ArgumentParser
import DoppelCore
import DoppelServer
import Foundation
import Logging
import ServiceLifecycle

struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record a client's exchanges with a server into a contract and a scenario.",
        discussion: """
            A recording proxy: point the client at it, use the app, then stop it with Ctrl-C (SIGINT) or SIGTERM. \
            It writes DIR/contract.yaml (one endpoint per method and path, ids, UUIDs and numbers made parameters; \
            each status seen a response with its recorded body) and DIR/scenario.yaml (the exchanges as steps expecting \
            their recorded statuses). Headers, query parameters and body fields (JSON, form, multipart, XML) named like \
            tokens, keys, passwords, secrets or sessions are never written, nor are their values wherever else they appear.
            """
    )

    @Option(help: "The server to record (http or https URL).")
    var target: String

    @Option(name: .shortAndLong, help: "The folder to write contract.yaml and scenario.yaml into.")
    var output: String

    @OptionGroup var listen: ListenOptions

    @Option(name: .customLong("keep-header"), help: "Write this header too, though it may be a secret (repeatable).")
    var keepHeader: [String] = []

    @Option(name: .customLong("proxy-timeout"), help: "How long the target may take to connect and to answer before a 504, like 30s.")
    var proxyTimeout = Seconds(30)

    @Option(name: .customLong("max-exchanges"), help: "The most exchanges recorded; later ones are still forwarded.")
    var maxExchanges: Int = 10_000

    @Option(
        name: .customLong("max-recorded-bytes"),
        help:
            "The most request and response body bytes kept in memory for the recording, like 256MiB; later bodies are left out, their statuses still recorded."
    )
    var maxRecordedBytes = Size(256 << 20)

    @Option(name: .customLong("log-format"), help: "Request log lines.")
    var logFormat: RequestLog.Format = .text

    var contractFile: URL { URL(fileURLWithPath: output).appendingPathComponent("contract.yaml") }
    var scenarioFile: URL { URL(fileURLWithPath: output).appendingPathComponent("scenario.yaml") }

    func validate() throws {
        guard upstreamURL(target) != nil else {
            throw ValidationError("--target must be an http or https URL like http://127.0.0.1:9000 or https://staging.example.com/api")
        }
        guard maxExchanges > 0 else { throw ValidationError("--max-exchanges must be at least 1") }
        _ = try proxyTimeout.positive("--proxy-timeout")
        for file in [contractFile, scenarioFile] where FileManager.default.fileExists(atPath: file.path) {
            throw ValidationError("\(file.path) exists already; choose another --output folder, or move it away")
        }
    }

    func run() async throws {
        // An empty contract: every request goes to the target.
        let contract: Contract
        do {
            contract = try ContractLoader.load(text: "doppel: 1\nendpoints: {}\n", file: "recording.yaml")
        } catch {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        var configuration = ServerConfiguration(host: listen.host, port: listen.port, logFormat: logFormat)
        configuration.proxy = upstreamURL(target)
        configuration.proxyTimeout = proxyTimeout.value
        let recorder = Recorder(limit: maxExchanges, maxBodyBytes: maxRecordedBytes.bytes)
        let log = RequestLog(format: configuration.logFormat)
        let app = buildApplication(
            slot: EngineSlot(MockEngine(contract: contract, configuration: configuration)), configuration: configuration,
            log: log, recorder: recorder
        ) { [listen, target, output] port in
            let address = listen.urlHost
            log.line(
                "Recording \(target) on http://\(address):\(port); stop with Ctrl-C to write \(output)/contract.yaml and \(output)/scenario.yaml")
        }
        ShutdownSignals.exitOnSecondSignal { log.flush(timeout: 0.5) }
        do {
            var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "doppel"))
            group.maximumGracefulShutdownDuration = .seconds(5)
            group.maximumCancellationDuration = .seconds(2)
            try await ServiceGroup(configuration: group).run()
        } catch {
            FileHandle.standardError.write(Data("doppel: cannot record on \(listen.host):\(listen.port): \(ListenOptions.failure(error))\n".utf8))
            throw ExitCode(1)
        }
        let exchanges = recorder.exchanges
        let written = RecordingWriter.write(exchanges, target: target, contractFile: "contract.yaml", keepHeaders: Set(keepHeader))
        do {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            try Data(written.contract.utf8).write(to: contractFile, options: .atomic)
            try Data(written.scenario.utf8).write(to: scenarioFile, options: .atomic)
        } catch {
            FileHandle.standardError.write(Data("doppel: cannot write the recording into \(output): \(error)\n".utf8))
            throw ExitCode(1)
        }
        log.line(
            "Recorded \(exchanges.count) exchange\(exchanges.count == 1 ? "" : "s") (\(written.endpoints) endpoint\(written.endpoints == 1 ? "" : "s")) into \(contractFile.path) and \(scenarioFile.path)"
                + (recorder.dropped > 0 ? "; \(recorder.dropped) more were forwarded past --max-exchanges and not recorded" : "")
                + (recorder.omittedBodies > 0 ? "; \(recorder.omittedBodies) bodies were left out past --max-recorded-bytes" : ""))
        log.flush()
    }
}
