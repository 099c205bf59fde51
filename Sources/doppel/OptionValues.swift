import ArgumentParser
import DoppelCore
import DoppelServer

// Option values read once, as ArgumentParser parses the command line: a
// command's `run` uses them as they are, with nothing to parse again.
// Text that is not a value of the type is refused by ArgumentParser, with
// the option's help (which gives an example); a value outside what an
// option allows is refused by the command's `validate`.

/// A duration option (`30s`, `200ms`, `1h`, `0`).
struct Seconds: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let value: Double

    init(_ value: Double) {
        self.value = value
    }

    init?(argument: String) {
        guard let seconds = Serve.seconds(argument) else { return nil }
        value = seconds
    }

    /// As `--help` shows a default: `30s`, `1h`.
    var description: String { Defaults.seconds(value) }
    var defaultValueDescription: String { description }

    /// The seconds, refused with the option's name where zero is not allowed.
    func positive(_ option: String, zeroAllowed: Bool = false) throws -> Double {
        guard value > 0 || (zeroAllowed && value == 0) else {
            throw ValidationError("\(option) must be a duration like 30s\(zeroAllowed ? " (or 0)" : "")")
        }
        return value
    }
}

/// A size option (`1MiB`, `64KiB`, `1048576`).
struct Size: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let bytes: Int

    init(_ bytes: Int) {
        self.bytes = bytes
    }

    init?(argument: String) {
        guard let bytes = ByteSize.parse(argument) else { return nil }
        self.bytes = bytes
    }

    /// As `--help` shows a default: `1MiB`.
    var description: String { Defaults.size(bytes) }
    var defaultValueDescription: String { description }
}

/// `--delay`: a duration, or a range to pick from.
extension Delay: ExpressibleByArgument {
    public init?(argument: String) {
        guard let delay = Delay.parse(argument) else { return nil }
        self = delay
    }
}

extension RequestLog.Format: ExpressibleByArgument {}
