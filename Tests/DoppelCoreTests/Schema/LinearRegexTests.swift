import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@Suite struct LinearRegexTests {
    @Test(arguments: [
        ("^[a-z]+$", "hello", true), ("^[a-z]+$", "Hello", false), ("ell", "hello", true), ("^ell", "hello", false),
        ("a|b|c", "xxcxx", true), ("^(ab)*$", "ababab", true), ("^(ab)*$", "ababa", false), ("^a{2,3}$", "aa", true),
        ("^a{2,3}$", "aaaa", false), ("^a{2}$", "aa", true), ("^a{2,}$", "aaaaa", true), ("^\\d{3}-\\d{4}$", "555-1234", true),
        ("^\\w+@\\w+\\.com$", "me@example.com", true), ("^[^@ ]+@[^@ ]+$", "a b@c", false), ("\\bcat\\b", "a cat here", true),
        ("\\bcat\\b", "concatenate", false), ("^.+$", "line\nbreak", false), ("^[\\s\\S]+$", "line\nbreak", true),
        ("^\\u00e9t\\u00e9$", "été", true), ("^[а-я]+$", "сказка", true), ("^x*?y$", "xxxy", true), ("a{", "a{", true),
        ("^(?:red|green)-(?<n>\\d+)$", "green-42", true), ("^[\\d-]+$", "12-34", true), ("^[\\D]+$", "ab1", false),
        ("(x+x+)+y", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", false),
        ("^$", "", true), ("^[+-]?\\d+(\\.\\d+)?$", "-3.14", true), ("^\\x41\\u{1F600}$", "A😀", true),
        // Unicode property escapes: general categories and their groups, negated, inside classes.
        ("^\\p{Letter}+$", "Hello", true), ("^\\p{L}+$", "πσ", true), ("^\\p{L}+$", "123", false), ("^\\p{Lu}\\p{Ll}+$", "Émile", true),
        ("^\\p{Nd}+$", "١٢٣", true), ("^\\P{Nd}+$", "abc", true), ("^\\P{Nd}+$", "a1", false), ("^[\\p{L}\\d_]+$", "näme_1", true),
        ("^\\p{gc=Lu}$", "a", false), ("^\\p{White_Space}$", "\u{3000}", true),
    ])
    func matchesLikeECMAScript(_ pattern: String, _ text: String, _ expected: Bool) throws {
        #expect(try LinearRegex(pattern).matches(text) == expected)
    }

    @Test(arguments: [
        "(a)\\1", "(?=a)", "(?!a)", "(?<=a)b", "(?<!a)b", "[a", "(a", "a)", "*a", "a**", "\\p{NoSuchProperty}", "\\pL", "\\p{L", "a{1,200}{1,200}",
        "[z-a]",
    ])
    func refusesWhatCannotRunInLinearTimeOrIsMalformed(_ pattern: String) {
        #expect((try? LinearRegex(pattern)) == nil)
    }

    @Test func catastrophicPatternsStayLinearOnLongInput() async throws {
        // Seconds of matching in a debug build: on a thread of its own (`offThePool`).
        let (evil, long) = try await offThePool {
            // A long valid input: no stack limit, no false 422.
            (
                try LinearRegex("(x+x+)+y").matches(String(repeating: "x", count: 200_000)),
                try LinearRegex("^([a-z]+ ?)+$").matches(String(repeating: "word ", count: 100_000))
            )
        }
        #expect(!evil)
        #expect(long)
    }

    @Test func contractsReportPatternsItCannotRun() {
        let found = diagnostics(
            of: """
                doppel: 1
                schemas:
                  Code: { type: string, pattern: '^(a)\\1$' }
                endpoints:
                  e: { request: GET /e, responses: [ { status: 200 } ] }
                """)
        #expect(
            found.map(\.description) == [
                "test.yaml:3:34: error: unusable 'pattern' in schema 'Code': backreferences are not supported (they cannot run in linear time)"
            ])
    }
}
