// The request and response bodies of the image prediction endpoint as the
// Magical Stories IllustrationService decodes them (seed 003 describes
// internal Codable structs for them without printing their fields; these
// follow the provider's JSON).
import Foundation

enum ImagenModels {
    struct PredictResponse: Codable {
        let predictions: [Prediction]
    }

    struct Prediction: Codable {
        let bytesBase64Encoded: String
        let mimeType: String
    }

    /// The provider's error envelope.
    struct ErrorResponse: Codable {
        let error: ErrorBody
    }

    struct ErrorBody: Codable {
        let code: Int
        let message: String
        let status: String
    }
}
