import DoppelCore

/// The dashboard's files under `/__doppel/ui/`: a page, its style and its
/// script, written by hand (no framework, no build step) and compiled into
/// the binary (`PackageResources`). They hold no data: the page reads the
/// admin API and `GET /__doppel/events` with the token it asks for.
enum Dashboard {
    static let root = AdminAPI.prefix + "/ui/"

    private static let files: [String: (type: String, bytes: [UInt8])] = [
        "": ("text/html; charset=utf-8", PackageResources.index_html),
        "dashboard.css": ("text/css; charset=utf-8", PackageResources.dashboard_css),
        "dashboard.js": ("text/javascript; charset=utf-8", PackageResources.dashboard_js),
    ]

    /// What the page may load and call: its own files and this server, nothing inline, no frames.
    static let securityHeaders: [(name: String, value: String)] = [
        (
            name: "Content-Security-Policy",
            value:
                "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        (name: "X-Content-Type-Options", value: "nosniff"),
        (name: "Referrer-Policy", value: "no-referrer"),
        (name: "Cache-Control", value: "no-cache"),
    ]

    /// The file a request asks for, a redirect from `/__doppel/ui`, or nil
    /// when the path is not the dashboard's.
    static func respond(to request: RecordedRequest, tokenRequired: Bool) -> MockResponse? {
        let path = request.path
        if path == AdminAPI.prefix + "/ui" {
            return MockResponse(status: 308, headers: [(name: "Location", value: root)])
        }
        guard path.hasPrefix(root) else { return nil }
        guard request.method == "GET" || request.method == "HEAD" else {
            return MockResponse(status: 405, headers: [(name: "Allow", value: "GET, HEAD")])
        }
        let name = String(path.dropFirst(root.count))
        if name == "settings.json" {
            // Whether to ask for the token before the first call (rather than after a 401 the console would log).
            return MockResponse(
                status: 200, headers: [(name: "Content-Type", value: "application/json")] + securityHeaders,
                body: Array(#"{"token_required":\#(tokenRequired)}"#.utf8))
        }
        guard let file = files[name] else {
            return MockResponse(
                status: 404, headers: [(name: "Content-Type", value: "text/plain; charset=utf-8")],
                body: Array("No such file of the dashboard; it is at \(root)\n".utf8))
        }
        return MockResponse(
            status: 200, headers: [(name: "Content-Type", value: file.type)] + securityHeaders,
            body: file.bytes)
    }
}
