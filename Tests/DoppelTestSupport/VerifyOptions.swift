import DoppelRunner

extension ProviderVerifier.Options {
    /// The defaults with a generous timeout per request and one random
    /// sequence: the full suite runs hundreds of tests on two cores, and a
    /// loopback server held up for seconds by the others is not what a
    /// verify test is about (`.ci/run` verifies every bundled contract with
    /// the defaults, through the command line).
    package static var inTheSuite: Self {
        var options = Self()
        options.timeout = 60
        options.walks = 1
        return options
    }
}
