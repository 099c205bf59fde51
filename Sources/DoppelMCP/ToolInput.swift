import DoppelCore

/// A tool call's arguments, read by name and type: each reader refuses a
/// value of the wrong type with a message naming the argument and what it
/// takes, and `refuseUnknown` refuses a name the tool does not take (a
/// misspelt `sesion` would otherwise act on the wrong session).
struct ToolInput {
    /// Why a call's input does not fit its tool, said to the model.
    struct Refusal: Error {
        let message: String
    }

    let arguments: [String: JSON]
    let tool: String

    init(_ arguments: [String: JSON], tool: String) {
        self.arguments = arguments
        self.tool = tool
    }

    func refuseUnknown(allowed: [String]) throws(Refusal) {
        let unknown = arguments.keys.filter { !allowed.contains($0) }.sorted()
        guard unknown.isEmpty else {
            let takes = allowed.isEmpty ? "no arguments" : "only " + allowed.map { "`\($0)`" }.joined(separator: ", ")
            throw Refusal(message: "\(tool) takes \(takes); unknown: \(unknown.map { "`\($0)`" }.joined(separator: ", ")).")
        }
    }

    private func refuse(_ name: String, _ takes: String) -> Refusal {
        Refusal(message: "\(tool): `\(name)` must be \(takes).")
    }

    /// A string argument; nil when absent (or null).
    func string(_ name: String) throws(Refusal) -> String? {
        switch arguments[name] {
        case nil, .null?: return nil
        case .string(let value)?:
            guard !value.isEmpty else { throw refuse(name, "a non-empty string") }
            return value
        default: throw refuse(name, "a string")
        }
    }

    func requiredString(_ name: String) throws(Refusal) -> String {
        guard let value = try string(name) else { throw Refusal(message: "\(tool) needs `\(name)`.") }
        return value
    }

    /// An integer argument (a whole double, as some clients send, is taken).
    func int(_ name: String) throws(Refusal) -> Int? {
        switch arguments[name] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case .double(let value)? where value.rounded() == value && abs(value) < 1e15: return Int(value)
        default: throw refuse(name, "an integer")
        }
    }

    func bool(_ name: String) throws(Refusal) -> Bool? {
        switch arguments[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw refuse(name, "true or false")
        }
    }

    /// An object argument whose values are strings (headers).
    func strings(_ name: String) throws(Refusal) -> [(String, String)] {
        switch arguments[name] {
        case nil, .null?: return []
        case .object(let members)?:
            return try members.pairs.sorted { $0.key < $1.key }.map { (key, value) throws(Refusal) in
                guard case .string(let text) = value else { throw refuse(name, "an object of strings") }
                return (key, text)
            }
        default: throw refuse(name, "an object of strings")
        }
    }

    /// Any JSON value, as given.
    func json(_ name: String) -> JSON? {
        arguments[name].flatMap { $0.isNull ? nil : $0 }
    }
}

extension Error {
    /// What a tool's failure says to the model.
    var message: String { (self as? ToolInput.Refusal)?.message ?? "\(self)" }
}
