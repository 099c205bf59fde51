// `import DoppelTesting` is all a test needs: contracts, scenarios, the
// engine and its journal (DoppelCore), test servers and the scenario runner
// (DoppelRunner), and server configuration (DoppelServer).
@_exported import DoppelCore
@_exported import DoppelRunner
@_exported import DoppelServer
