// The models of the tale generator API document (seed 000), as printed.
// Some declare snake_case CodingKeys (decoded with a plain JSONDecoder);
// the others (PlansResponse, Plan, PlanLimits, FreeStory) declare none and
// rely on keyDecodingStrategy = .convertFromSnakeCase. The document's client
// applies the latter to all, which the former cannot survive; each is
// decoded here the way it works.
import Foundation

enum TalesModels {
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }

    struct GenerateStoryResponse: Codable {
        let id: String
        let title: String
        let content: String
        let moral: String
        let language: String
        let storyType: String
        let storyLength: Int
        let child: ChildInfo
        let hero: HeroInfo?
        let relationshipDescription: String?
        let audioFileUrl: String?
        let createdAt: String

        enum CodingKeys: String, CodingKey {
            case id, title, content, moral, language
            case storyType = "story_type"
            case storyLength = "story_length"
            case child, hero
            case relationshipDescription = "relationship_description"
            case audioFileUrl = "audio_file_url"
            case createdAt = "created_at"
        }
    }

    struct ChildInfo: Codable {
        let id: String
        let name: String
        let ageCategory: String
        let gender: String
        let interests: [String]

        enum CodingKeys: String, CodingKey {
            case id, name, gender, interests
            case ageCategory = "age_category"
        }
    }

    struct HeroInfo: Codable {
        let id: String
        let name: String
        let gender: String
        let appearance: String
    }

    struct SubscriptionInfo: Codable {
        let subscription: Subscription
        let limits: Limits
        let features: Features
    }

    struct Subscription: Codable {
        let plan: String
        let status: String
        let startDate: String
        let endDate: String?

        enum CodingKeys: String, CodingKey {
            case plan, status
            case startDate = "start_date"
            case endDate = "end_date"
        }
    }

    struct Limits: Codable {
        let monthlyStories: Int
        let storiesUsed: Int
        let storiesRemaining: Int
        let resetDate: String
        let childProfilesLimit: Int
        let childProfilesCount: Int
        let audioEnabled: Bool
        let heroStoriesEnabled: Bool
        let combinedStoriesEnabled: Bool
        let maxStoryLength: Int
        let prioritySupport: Bool

        enum CodingKeys: String, CodingKey {
            case monthlyStories = "monthly_stories"
            case storiesUsed = "stories_used"
            case storiesRemaining = "stories_remaining"
            case resetDate = "reset_date"
            case childProfilesLimit = "child_profiles_limit"
            case childProfilesCount = "child_profiles_count"
            case audioEnabled = "audio_enabled"
            case heroStoriesEnabled = "hero_stories_enabled"
            case combinedStoriesEnabled = "combined_stories_enabled"
            case maxStoryLength = "max_story_length"
            case prioritySupport = "priority_support"
        }
    }

    struct Features: Codable {
        let audioGeneration: Bool
        let heroStories: Bool
        let combinedStories: Bool
        let prioritySupport: Bool

        enum CodingKeys: String, CodingKey {
            case audioGeneration = "audio_generation"
            case heroStories = "hero_stories"
            case combinedStories = "combined_stories"
            case prioritySupport = "priority_support"
        }
    }

    struct APIError: Codable, Error {
        let detail: String
        let errorCode: String?
        let limitInfo: LimitInfo?

        enum CodingKeys: String, CodingKey {
            case detail
            case errorCode = "error_code"
            case limitInfo = "limit_info"
        }
    }

    struct LimitInfo: Codable {
        let currentPlan: String
        let monthlyLimit: Int
        let storiesUsed: Int
        let resetDate: String

        enum CodingKeys: String, CodingKey {
            case currentPlan = "current_plan"
            case monthlyLimit = "monthly_limit"
            case storiesUsed = "stories_used"
            case resetDate = "reset_date"
        }
    }

    struct PlansResponse: Codable {
        let plans: [Plan]
        let currentPlan: String
    }

    struct Plan: Codable {
        let tier: String
        let displayName: String
        let description: String
        let monthlyPrice: Double
        let annualPrice: Double
        let features: [String]
        let limits: PlanLimits
        let isPurchasable: Bool
        let isCurrent: Bool
    }

    struct PlanLimits: Codable {
        let monthlyStories: Int
        let childProfiles: Int
        let maxStoryLength: Int
        let audioEnabled: Bool
        let heroStoriesEnabled: Bool
        let combinedStoriesEnabled: Bool
        let prioritySupport: Bool
    }

    struct FreeStory: Codable {
        let id: String
        let title: String
        let content: String
        let ageCategory: String
        let language: String
        let createdAt: String
    }
}
