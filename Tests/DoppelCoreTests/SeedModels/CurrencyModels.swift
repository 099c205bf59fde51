// The models of the Currency API integration guide (seed 001), as printed
// there: snake_case keys through CodingKeys, decoded with a plain JSONDecoder.
import Foundation

enum CurrencyModels {
    struct DeviceRegisterResponse: Codable {
        let success: Bool
        let message: String
        let deviceId: Int

        enum CodingKeys: String, CodingKey {
            case success, message
            case deviceId = "device_id"
        }
    }

    struct ExchangeRatesResponse: Codable {
        let success: Bool
        let base: String
        let rates: [String: RateInfo]?
        let target: String?
        let rate: Double?
        let count: Int?
        let lastUpdated: String?

        enum CodingKeys: String, CodingKey {
            case success, base, rates, target, rate, count
            case lastUpdated = "last_updated"
        }
    }

    struct RateInfo: Codable {
        let rate: Double
        let lastUpdated: String

        enum CodingKeys: String, CodingKey {
            case rate
            case lastUpdated = "last_updated"
        }
    }

    struct ConvertResponse: Codable {
        let success: Bool
        let amount: Double
        let from: String
        let to: String
        let convertedAmount: Double
        let rate: Double
        let lastUpdated: String

        enum CodingKeys: String, CodingKey {
            case success, amount, from, to, rate
            case convertedAmount = "converted_amount"
            case lastUpdated = "last_updated"
        }
    }

    /// The guide prints no error model; its clients check `success`. This is
    /// the smallest model that reads the contract's error bodies.
    struct ErrorResponse: Codable {
        let success: Bool
        let message: String
    }
}
