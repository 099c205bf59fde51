import Foundation

/// The scenarios a server can switch sessions to, by name.
public struct ScenarioCatalog: Sendable {
    /// The scenarios by name.
    public private(set) var scenarios: [String: Scenario] = [:]

    /// A catalog of `scenarios`, by name.
    public init(_ scenarios: [String: Scenario] = [:]) {
        self.scenarios = scenarios
    }

    /// The scenario named `name`.
    public subscript(name: String) -> Scenario? { scenarios[name] }

    /// Names in order.
    public var names: [String] { scenarios.keys.sorted() }

    /// Adds `scenario` as `name`, replacing any of that name.
    public mutating func add(_ scenario: Scenario, as name: String) {
        scenarios[name] = scenario
    }

    /// Loads every `.yaml` scenario under `directory` whose contract is the
    /// served one, named by its path below the directory without `.yaml`
    /// (`tales/monthly-limit`). Scenarios of other contracts are skipped.
    public static func load(directory: String, contract: Contract) throws(ContractError) -> ScenarioCatalog {
        var catalog = ScenarioCatalog()
        var problems: [Diagnostic] = []
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        let served = URL(fileURLWithPath: contract.file).standardizedFileURL.resolvingSymlinksInPath().path
        for file in yamlFiles(under: root) {
            guard let contractFile = contractReference(of: file),
                URL(fileURLWithPath: contractFile).standardizedFileURL.resolvingSymlinksInPath().path == served
            else { continue }
            do {
                let scenario = try ScenarioLoader.load(file: file.path, contract: contract)
                let relative = String(file.deletingPathExtension().path.dropFirst(root.path.count + 1))
                catalog.add(scenario, as: relative)
            } catch {
                problems += error.diagnostics
            }
        }
        if !problems.isEmpty { throw ContractError(diagnostics: problems) }
        return catalog
    }

    /// Folders of other tools' files, never searched for contracts and scenarios.
    static let foreignFolders: Set<String> = ["node_modules", "Pods", "Carthage", "DerivedData", "vendor"]

    /// Every `.yaml` file below a folder, sorted; hidden files and folders
    /// (`.build`, `.git`, `.github`) and other tools' folders are left out.
    public static func yamlFiles(under root: URL) -> [URL] {
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isDirectoryKey], options: [.skipsHiddenFiles])
        else { return [] }
        var found: [URL] = []
        while let url = enumerator.nextObject() as? URL {
            if foreignFolders.contains(url.lastPathComponent), (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true {
                enumerator.skipDescendants()
                continue
            }
            if url.pathExtension == "yaml" || url.pathExtension == "yml" { found.append(url.standardizedFileURL) }
        }
        return found.sorted { $0.path < $1.path }
    }

    /// The contract path a scenario file names, resolved from its folder, without loading it.
    public static func contractReference(of file: URL) -> String? {
        guard let text = try? String(contentsOf: file, encoding: .utf8),
            case .success(let node?) = SourceReader.read(text, file: file.path),
            let reference = node["contract"]?.scalarText
        else { return nil }
        return reference.hasPrefix("/") ? reference : file.deletingLastPathComponent().appendingPathComponent(reference).path
    }
}
