extension Duration {
    /// The duration in whole microseconds, as journal entries and log lines give it.
    package var wholeMicroseconds: Int {
        Int(components.seconds) * 1_000_000 + Int(components.attoseconds / 1_000_000_000_000)
    }
}
