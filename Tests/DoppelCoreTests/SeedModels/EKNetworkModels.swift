// Bodies of the EKNetwork demo API (seed 004 prints the library's own
// response types; the demo API's bodies are this contract's). Decoded with
// the library's default JSONDecoder(): camelCase keys.
import Foundation

enum EKNetworkModels {
    /// From the document: a payload for endpoints that signal success by status only.
    struct EmptyResponse: Decodable, Equatable {}

    /// From the document: only the status code and headers.
    struct StatusCodeResponse: Decodable, Equatable {
        let statusCode: Int
        let headers: [String: String]
    }

    struct TokenResponse: Codable {
        let accessToken: String
        let refreshToken: String
        let tokenType: String
        let expiresIn: Int
    }

    struct Profile: Codable {
        let id: Int
        let email: String
        let name: String
    }

    struct UploadResponse: Codable {
        struct File: Codable {
            let name: String
            let filename: String
            let contentType: String?
            let size: Int
        }
        let files: [File]
        let fields: [String: String]
    }

    struct FeedbackResponse: Codable {
        let received: Bool
        let name: String
        let email: String
        let rating: Int?
    }

    struct ClientInfo: Codable {
        let userAgent: String
        let valid: Bool
    }

    struct FlakyResponse: Codable {
        let ok: Bool
        let message: String
    }

    /// Errors the client's errorDecoder reads.
    struct ErrorResponse: Codable {
        struct Field: Codable {
            let field: String
            let message: String
        }
        let error: String
        let message: String
        let fields: [Field]?
        let received: String?
    }

    struct BusinessErrorResponse: Codable {
        struct Body: Codable {
            let type: String
            let code: String
            let message: String
        }
        let error: Body
    }
}
