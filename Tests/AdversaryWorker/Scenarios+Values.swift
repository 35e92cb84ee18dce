// Scenarios for values and keys: record types whose decoders validate what they are given.
// Learning a type's keys must never feed its decoder made-up values (an empty string to
// `Kind(rawValue:)!`, an email without "@" to a precondition): that would trap.

import Foundation
import RequestSet

/// A record whose `init(from:)` traps on anything but valid input, as real ones do.
struct ValidatedMember: Record {
  enum Kind: String, Codable, Sendable { case admin, guest }
  var id: Int
  var kind: Kind
  var email: String
  var nickname: String?

  init(id: Int, kind: Kind, email: String, nickname: String? = nil) {
    self.id = id
    self.kind = kind
    self.email = email
    self.nickname = nickname
  }

  enum CodingKeys: String, CodingKey { case id, kind, email, nickname }

  init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    id = try c.decode(Int.self, forKey: .id)
    kind = Kind(rawValue: try c.decode(String.self, forKey: .kind))!
    email = try c.decode(String.self, forKey: .email)
    precondition(email.contains("@"), "not an email: \(email)")
    nickname = try c.decodeIfPresent(String.self, forKey: .nickname)
  }
}

extension Scenarios {
  /// `validatingDecoder <memory|log|array>`: every query shape on a store of validating
  /// records, from empty to full; prints what each returned.
  static let values: [String: Scenario] = [
    "validatingDecoder": { args in
      let members = [
        ValidatedMember(id: 1, kind: .admin, email: "ann@example.com"),
        ValidatedMember(id: 2, kind: .guest, email: "bo@example.com"),
        ValidatedMember(id: 3, kind: .guest, email: "cy@example.com"),
      ]
      let set: RequestSet<ValidatedMember>
      switch args.first ?? "memory" {
      case "array":
        set = RequestSet(members)
      case "log":
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
          "adversary-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LogStore<ValidatedMember>(path: dir.appendingPathComponent("m.rslog").path)
        say("empty \(try RequestSet(store).filter("email", value: "x").fetchCount())")
        try store.createIndex(\.email)
        try store.insert(contentsOf: members)
        set = RequestSet(store)
      default:
        let store = MemoryStore<ValidatedMember>()
        say("empty \(try RequestSet(store).filter("email", value: "x").fetchCount())")
        try store.createIndex(\.email)
        try store.insert(contentsOf: members)
        set = RequestSet(store)
      }
      say("guests \(try set.filter("kind", value: "guest").fetch().map(\.id))")
      say("bo \(try set.filter(\.email == "bo@example.com").fetch().map(\.id))")
      say("sorted \(try set.sortBy(\.email, order: .descending).limit(2).fetch().map(\.id))")
      say("no nickname \(try set.filter("nickname", value: nil).fetchCount())")
    }
  ]
}
