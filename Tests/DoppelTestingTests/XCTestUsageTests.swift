import DoppelTesting
import XCTest

/// The same from XCTest: a shared server, a session per test.
final class XCTestUsageTests: XCTestCase {
    func testASessionPerTest() async throws {
        let server = try await DoppelTestServer.shared(contract: "contracts/tales.yaml")
        let doppel = server.session()
        let response = try await doppel.send("GET", "/api/v1/free-stories?language=en")
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(doppel.verify(endpoint: "list-free-stories", status: 200, count: 1).passed)
        XCTAssertEqual(server.session().journal().count, 0)
    }
}
