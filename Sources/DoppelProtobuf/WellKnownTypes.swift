import DoppelCore
import Foundation

/// protobuf's well-known types: their `.proto` files (read when a file
/// imports `google/protobuf/…` and the folder has no copy of its own), and
/// the JSON the mapping gives each instead of an object: a timestamp and a
/// duration as text, a wrapper as its value, `Struct`, `Value` and
/// `ListValue` as any JSON, a field mask as one string, an `Any` with its
/// `@type`.
enum WellKnownTypes {
    /// The files, by import path. Each declares what the official file
    /// declares on the wire (names, numbers, types); options and comments are left out.
    static let files: [String: String] = [
        "google/protobuf/timestamp.proto": "syntax = \"proto3\"; package google.protobuf; message Timestamp { int64 seconds = 1; int32 nanos = 2; }",
        "google/protobuf/duration.proto": "syntax = \"proto3\"; package google.protobuf; message Duration { int64 seconds = 1; int32 nanos = 2; }",
        "google/protobuf/empty.proto": "syntax = \"proto3\"; package google.protobuf; message Empty {}",
        "google/protobuf/field_mask.proto": "syntax = \"proto3\"; package google.protobuf; message FieldMask { repeated string paths = 1; }",
        "google/protobuf/any.proto": "syntax = \"proto3\"; package google.protobuf; message Any { string type_url = 1; bytes value = 2; }",
        "google/protobuf/wrappers.proto": """
        syntax = "proto3"; package google.protobuf;
        message DoubleValue { double value = 1; } message FloatValue { float value = 1; }
        message Int64Value { int64 value = 1; } message UInt64Value { uint64 value = 1; }
        message Int32Value { int32 value = 1; } message UInt32Value { uint32 value = 1; }
        message BoolValue { bool value = 1; } message StringValue { string value = 1; } message BytesValue { bytes value = 1; }
        """,
        "google/protobuf/struct.proto": """
        syntax = "proto3"; package google.protobuf;
        message Struct { map<string, Value> fields = 1; }
        message Value {
          oneof kind {
            NullValue null_value = 1; double number_value = 2; string string_value = 3;
            bool bool_value = 4; Struct struct_value = 5; ListValue list_value = 6;
          }
        }
        enum NullValue { NULL_VALUE = 0; }
        message ListValue { repeated Value values = 1; }
        """,
        // gRPC's rich errors: the status a call ends with, sent in `grpc-status-details-bin`, and its standard details.
        "google/rpc/status.proto": """
        syntax = "proto3"; package google.rpc; import "google/protobuf/any.proto";
        message Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }
        """,
        "google/rpc/error_details.proto": """
        syntax = "proto3"; package google.rpc; import "google/protobuf/duration.proto";
        message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
        message RetryInfo { google.protobuf.Duration retry_delay = 1; }
        message DebugInfo { repeated string stack_entries = 1; string detail = 2; }
        message QuotaFailure {
          message Violation {
            string subject = 1; string description = 2; string api_service = 3; string quota_metric = 4; string quota_id = 5;
            map<string, string> quota_dimensions = 6; int64 quota_value = 7; optional int64 future_quota_value = 8;
          }
          repeated Violation violations = 1;
        }
        message PreconditionFailure {
          message Violation { string type = 1; string subject = 2; string description = 3; }
          repeated Violation violations = 1;
        }
        message BadRequest {
          message FieldViolation { string field = 1; string description = 2; string reason = 3; LocalizedMessage localized_message = 4; }
          repeated FieldViolation field_violations = 1;
        }
        message RequestInfo { string request_id = 1; string serving_data = 2; }
        message ResourceInfo { string resource_type = 1; string resource_name = 2; string owner = 3; string description = 4; }
        message Help {
          message Link { string description = 1; string url = 2; }
          repeated Link links = 1;
        }
        message LocalizedMessage { string locale = 1; string message = 2; }
        """,
    ]

    /// The files every gRPC service's schema reads beside its own:
    /// `google.rpc.Status` and its details, and the services Doppel answers
    /// itself (server reflection, v1 and v1alpha, and health).
    static let grpcFiles = [
        "google/rpc/status.proto", "google/rpc/error_details.proto", "grpc/reflection/v1/reflection.proto",
        "grpc/reflection/v1alpha/reflection.proto", "grpc/health/v1/health.proto",
    ]

    /// gRPC's own services, by import path: the messages and methods their official files declare.
    static let grpcServiceFiles: [String: String] = [
        "grpc/reflection/v1/reflection.proto": reflection(package: "grpc.reflection.v1"),
        "grpc/reflection/v1alpha/reflection.proto": reflection(package: "grpc.reflection.v1alpha"),
        "grpc/health/v1/health.proto": """
        syntax = "proto3"; package grpc.health.v1;
        message HealthCheckRequest { string service = 1; }
        message HealthCheckResponse {
          enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
          ServingStatus status = 1;
        }
        service Health {
          rpc Check(HealthCheckRequest) returns (HealthCheckResponse);
          rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);
        }
        """,
    ]

    /// Server reflection's file: v1alpha declares what v1 does, in its own package.
    private static func reflection(package: String) -> String {
        "syntax = \"proto3\"; package \(package);\n" + """
            service ServerReflection { rpc ServerReflectionInfo(stream ServerReflectionRequest) returns (stream ServerReflectionResponse); }
            message ServerReflectionRequest {
              string host = 1;
              oneof message_request {
                string file_by_filename = 3; string file_containing_symbol = 4; ExtensionRequest file_containing_extension = 5;
                string all_extension_numbers_of_type = 6; string list_services = 7;
              }
            }
            message ExtensionRequest { string containing_type = 1; int32 extension_number = 2; }
            message ServerReflectionResponse {
              string valid_host = 1; ServerReflectionRequest original_request = 2;
              oneof message_response {
                FileDescriptorResponse file_descriptor_response = 4; ExtensionNumberResponse all_extension_numbers_response = 5;
                ListServiceResponse list_services_response = 6; ErrorResponse error_response = 7;
              }
            }
            message FileDescriptorResponse { repeated bytes file_descriptor_proto = 1; }
            message ExtensionNumberResponse { string base_type_name = 1; repeated int32 extension_number = 2; }
            message ListServiceResponse { repeated ServiceResponse service = 1; }
            message ServiceResponse { string name = 1; }
            message ErrorResponse { int32 error_code = 1; string error_message = 2; }
            """
    }

    static let wrappers: Set<String> = [
        "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value", "google.protobuf.UInt64Value",
        "google.protobuf.Int32Value", "google.protobuf.UInt32Value", "google.protobuf.BoolValue", "google.protobuf.StringValue",
        "google.protobuf.BytesValue",
    ]

    /// The types whose JSON is not their fields' object.
    static let special: Set<String> = wrappers.union([
        "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Struct", "google.protobuf.Value",
        "google.protobuf.ListValue", "google.protobuf.FieldMask", "google.protobuf.Any",
    ])

    // MARK: Timestamps and durations

    /// The first and last instants a Timestamp holds (0001-01-01 to 9999-12-31), in seconds.
    static let timestampRange: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    /// RFC 3339 in UTC, with 0, 3, 6 or 9 digits of fraction as needed (as `json_format` writes it).
    static func timestampText(seconds: Int64, nanos: Int) throws(ProtoCodec.Failure) -> String {
        guard timestampRange.contains(seconds), (0..<1_000_000_000).contains(nanos) else {
            throw ProtoCodec.Failure(message: "a Timestamp of \(seconds) s and \(nanos) ns is outside 0001-01-01 to 9999-12-31")
        }
        let days = Int(seconds.floorDiv(86_400))
        let inDay = Int(seconds - Int64(days) * 86_400)
        let date = UTCCalendar.civil(days: days)
        let text =
            pad(date.year, 4) + "-" + pad(date.month, 2) + "-" + pad(date.day, 2) + "T" + pad(inDay / 3600, 2) + ":"
            + pad(inDay / 60 % 60, 2) + ":" + pad(inDay % 60, 2)
        return text + fraction(nanos) + "Z"
    }

    /// `1.5s`, `-0.000001s`: seconds with 0, 3, 6 or 9 digits of fraction.
    static func durationText(seconds: Int64, nanos: Int) throws(ProtoCodec.Failure) -> String {
        guard abs(seconds) <= 315_576_000_000, abs(nanos) < 1_000_000_000, seconds == 0 || nanos == 0 || (seconds < 0) == (nanos < 0) else {
            throw ProtoCodec.Failure(message: "a Duration of \(seconds) s and \(nanos) ns is not one protobuf allows")
        }
        let negative = seconds < 0 || nanos < 0
        return (negative ? "-" : "") + String(abs(seconds)) + fraction(abs(nanos)) + "s"
    }

    private static func pad(_ number: Int, _ width: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    private static func fraction(_ nanos: Int) -> String {
        if nanos == 0 { return "" }
        if nanos % 1_000_000 == 0 { return "." + pad(nanos / 1_000_000, 3) }
        if nanos % 1000 == 0 { return "." + pad(nanos / 1000, 6) }
        return "." + pad(nanos, 9)
    }

    /// An RFC 3339 instant (`1972-01-01T10:00:20.021Z`, `…+01:30`) as seconds and nanoseconds since 1970 in UTC.
    static func parseTimestamp(_ text: String) -> (seconds: Int64, nanos: Int)? {
        let chars = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= chars.count else { return nil }
            var value = 0
            for index in range {
                guard (48...57).contains(chars[index]) else { return nil }
                value = value * 10 + Int(chars[index] - 48)
            }
            return value
        }
        guard chars.count >= 20, chars[4] == 45, chars[7] == 45, chars[10] == 84 || chars[10] == 116, chars[13] == 58, chars[16] == 58,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month),
            (1...UTCCalendar.daysInMonth(month, of: year)).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var nanos = 0
        if chars[index] == 46 {
            index += 1
            var digits = 0
            while index < chars.count, (48...57).contains(chars[index]) {
                guard digits < 9 else { return nil }
                nanos = nanos * 10 + Int(chars[index] - 48)
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { nanos *= 10 }
        }
        guard index < chars.count else { return nil }
        var offset = 0
        if chars[index] == 90 || chars[index] == 122 {
            index += 1
        } else if chars[index] == 43 || chars[index] == 45, let hours = number((index + 1)..<(index + 3)), index + 3 < chars.count,
            chars[index + 3] == 58, let minutes = number((index + 4)..<(index + 6))
        {
            offset = (hours * 60 + minutes) * 60 * (chars[index] == 45 ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        guard index == chars.count else { return nil }
        let seconds = Int64(UTCCalendar.days(year: year, month: month, day: day)) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offset)
        guard timestampRange.contains(seconds) else { return nil }
        return (seconds, nanos)
    }

    /// `1.5s`, `-3s`, `0.000000001s` as seconds and nanoseconds (of one sign).
    static func parseDuration(_ text: String) -> (seconds: Int64, nanos: Int)? {
        guard text.hasSuffix("s") else { return nil }
        var body = Substring(text.dropLast())
        let negative = body.hasPrefix("-")
        if negative { body = body.dropFirst() }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].allSatisfy(\.isASCII), let whole = Int64(parts[0]),
            whole <= 315_576_000_000
        else { return nil }
        var nanos = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...9).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(digits) else { return nil }
            nanos = value * Int(pow(10, Double(9 - digits.count)))
        }
        return negative ? (-whole, -nanos) : (whole, nanos)
    }

    // MARK: Field masks

    /// `["user.display_name", "photo"]` ↔ `"user.displayName,photo"`.
    static func maskText(_ paths: [String]) -> String {
        paths.map { ProtoParser.jsonName($0) }.joined(separator: ",")
    }

    static func maskPaths(_ text: String) -> [String] {
        guard !text.isEmpty else { return [] }
        return text.split(separator: ",").map { path in
            var snake = ""
            for character in path {
                if character.isUppercase {
                    snake += "_" + character.lowercased()
                } else {
                    snake.append(character)
                }
            }
            return snake
        }
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    fileprivate func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
