// The models of the Cleveroo DAM API reference (seed 002): property names as
// JSON keys (no CodingKeys), enums by case name, dates ISO 8601.
import Foundation

enum CleverooModels {
    /// How the app's APIClient decodes: default keys, ISO 8601 dates.
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    struct MentalMathSession: Codable {
        let id: String
        let childId: String
        let startTime: Date
        let endTime: Date?
        let questions: [SessionQuestion]
        let totalScore: Int
        let isCompleted: Bool
    }

    struct SessionQuestion: Codable {
        let questionId: String
        let question: String
        let difficulty: MathQuestion.Difficulty
        let correctAnswer: Int
        let userAnswer: Int
        let isCorrect: Bool
        let timeSpent: TimeInterval
        let pointsEarned: Int
    }

    struct MathQuestion: Codable {
        enum Difficulty: String, Codable { case easy, medium, hard }
        let id: String
        let question: String
        let correctAnswer: Int
        let difficulty: Difficulty
        let timeLimit: Int
        let createdAt: Date
    }

    struct SubmitAnswerResponse: Codable {
        let isCorrect: Bool
        let correctAnswer: Int
        let pointsEarned: Int
        let totalScore: Int
    }

    struct MentalMathProgress: Codable {
        let childId: String
        let totalSessions: Int
        let totalQuestionsAnswered: Int
        let correctAnswers: Int
        let averageScore: Double
        let averageTimePerQuestion: Double
        let lastPlayedAt: Date?
        let difficultyDistribution: [String: Int]

        var accuracyPercentage: Double {
            totalQuestionsAnswered == 0 ? 0 : Double(correctAnswers) / Double(totalQuestionsAnswered) * 100
        }
    }

    struct MentalMathReport: Codable {
        enum ReportPeriod: String, Codable { case daily, weekly, monthly }
        let childId: String
        let childName: String
        let reportPeriod: ReportPeriod
        let generatedAt: Date
        let progress: MentalMathProgress
        let recentSessions: [SessionSummary]
        let strengths: [String]
        let areasForImprovement: [String]
    }

    struct SessionSummary: Codable {
        let sessionId: String
        let date: Date
        let difficulty: MathQuestion.Difficulty
        let score: Int
        let questionsAnswered: Int
        let correctAnswers: Int
    }

    struct AIGame: Codable {
        enum GameType: String, Codable { case puzzle, memory, logic, creativity, math, language }
        enum Difficulty: String, Codable { case easy, medium, hard }
        struct AgeRange: Codable {
            let min: Int
            let max: Int
        }
        let id: String
        let title: String
        let description: String
        let gameType: GameType
        let difficulty: Difficulty
        let ageRange: AgeRange
        let estimatedDuration: Int
        let personalityTraits: [PersonalityTrait]
        let instructions: String
        let content: GameContent
        let createdAt: Date
        let isActive: Bool
    }

    struct PersonalityTrait: Codable {
        let id: String
        let name: String
        let description: String
    }

    struct GameContent: Codable {
        let levels: [GameLevel]
        let assets: [String: String]
        let metadata: [String: String]
    }

    struct GameLevel: Codable {
        let id: String
        let levelNumber: Int
        let title: String
        let challenges: [Challenge]
        let timeLimit: Int?
    }

    struct Challenge: Codable {
        enum ChallengeType: String, Codable { case multipleChoice, freeText }
        let id: String
        let prompt: String
        let type: ChallengeType
        let correctAnswer: String
        let options: [String]?
        let hints: [String]
    }

    struct AIGameSession: Codable {
        let id: String
        let gameId: String
        let childId: String
        let startTime: Date
        let endTime: Date?
        let currentLevel: Int
        let completedChallenges: [CompletedChallenge]
        let score: Int
        let events: [GameEvent]
        let isCompleted: Bool
    }

    struct CompletedChallenge: Codable {
        let challengeId: String
        let answer: String
        let isCorrect: Bool
        let pointsEarned: Int
        let timeSpent: TimeInterval
        let hintsUsed: Int
        let completedAt: Date
    }

    struct GameEvent: Codable {
        enum EventType: String, Codable {
            case gameStarted, levelStarted, levelCompleted, challengeAttempted, challengeCompleted, hintRequested, pauseRequested
            case gameCompleted, gameAbandoned
        }
        let id: String
        let eventType: EventType
        let timestamp: Date
        let data: [String: String]
    }

    struct SubmitChallengeResponse: Codable {
        let isCorrect: Bool
        let correctAnswer: String
        let pointsEarned: Int
        let totalScore: Int
        let feedback: String
        let nextChallenge: Challenge?
    }

    struct AIGameProgress: Codable {
        let childId: String
        let totalGamesPlayed: Int
        let totalGamesCompleted: Int
        let totalTimeSpent: TimeInterval
        let averageScore: Double
        let traitAssessments: [TraitAssessment]
        let favoriteGameTypes: [AIGame.GameType]
        let lastPlayedAt: Date?

        var completionRate: Double {
            totalGamesPlayed == 0 ? 0 : Double(totalGamesCompleted) / Double(totalGamesPlayed) * 100
        }
    }

    struct TraitAssessment: Codable {
        enum AssessmentLevel: String, Codable { case developing, emerging, proficient, advanced }
        let traitId: String
        let traitName: String
        let score: Double
        let level: AssessmentLevel
        let observations: [String]
    }

    /// The body APIError.httpError's message is read from.
    struct ErrorResponse: Codable {
        let error: String
        let message: String
    }
}
