import Foundation
import Testing
@testable import RequestSet

@Suite(.ownThreads) struct ErrorTests {
  @Test(arguments: StoreKind.allCases)
  func getReturnsExactlyOneOrSaysHowMany(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try all.filter("name", value: "Rex").get().id == 3)
    let none = try #require(throws: RequestSetError.self) { try all.filter("name", value: "Nobody").get() }
    #expect(none.code == .notFound)
    #expect(none.message == #"get() found no Animal matching name == "Nobody". Check the filters, or use first."#)
    let many = try #require(throws: RequestSetError.self) { try all.filter("species", value: "Cow").get() }
    #expect(many.code == .multipleResults)
    #expect(
      many.message
        == #"get() expects exactly one Animal but 2 match species == "Cow". Add filters that single one out, or use first."#
    )
  }

  @Test func aThrowingPredicateIsReported() throws {
    let all = RequestSet(Animal.zoo)
    let error = try #require(throws: RequestSetError.self) {
      try all.filter(#Predicate<Animal> { $0.nickname! == "x" }).fetch()
    }
    #expect(error.code == .predicateFailed)
    #expect(error.underlying != nil)
  }

  @Test func aValueThatFailsToEncodeIsReportedAtEvaluation() throws {
    struct Unencodable: Encodable, Sendable {
      func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "no"))
      }
    }
    let set = RequestSet(Animal.zoo).filter("name", value: Unencodable())
    let error = try #require(throws: RequestSetError.self) { try set.fetch() }
    #expect(error.code == .encodingFailed)
    #expect(error.description.hasPrefix("RequestSetError.encodingFailed: Could not encode a value of type Unencodable"))
  }

  /// The collection members cannot throw: they stop with the same message, and never
  /// return an empty or partial result instead. Each runs in an `AdversaryWorker` child
  /// (`Scenarios+Traps.swift`), which must stop and print nothing it read.
  @Test func theCollectionPathStopsWithTheErrorsMessage() throws {
    let count = try AdversaryChild.run("trap.count.unknownKey")
    #expect(count.stopped && count.lines.isEmpty, "\(count)")
    #expect(
      count.standardError.contains(#"RequestSetError.unknownKey: Unknown key "nmae" for Animal. Known keys: age, id"#),
      "\(count)")

    let iteration = try AdversaryChild.run("trap.iterate.typeMismatch")
    #expect(iteration.stopped && iteration.lines.isEmpty, "\(iteration)")
    #expect(
      iteration.standardError.contains(#"RequestSetError.typeMismatch: Key "age" of Animal holds number values"#),
      "\(iteration)")
  }

  /// An index out of range is a programming error; a negative limit or offset is input,
  /// which makes the set invalid instead (see `InputTests`).
  @Test func misuseIsAPreconditionFailure() throws {
    let subscripted = try AdversaryChild.run("trap.subscript")
    #expect(subscripted.stopped && subscripted.lines.isEmpty, "\(subscripted)")
    #expect(subscripted.standardError.contains("Index 6 is out of range: the RequestSet holds 6 records"), "\(subscripted)")
    let negative = RequestSet(Animal.zoo).limit(-1).offset(-1)
    #expect(try #require(throws: RequestSetError.self) { try negative.fetch() }.code == .invalidWindow)
  }
}

/// Messages name types and kinds with the article English uses for them.
@Suite(.ownThreads) struct ArticleTests {
  @Test func theArticleFollowsTheSound() {
    let cases = [
      ("Int", "an Int"), ("String", "a String"), ("array", "an array"), ("Animal", "an Animal"),
      ("number", "a number"), ("nested object", "a nested object"), ("Optional<Int>", "an Optional<Int>"),
      ("UUID", "a UUID"), ("UInt8", "a UInt8"), ("URL", "a URL"), ("HTTPHeader", "an HTTPHeader"),
      ("SQLRow", "an SQLRow"), ("User", "a User"), ("union", "a union"), ("Umbrella", "an Umbrella"),
      ("hour", "an hour"), ("Horse", "a Horse"), ("Bool", "a Bool"), ("Item", "an Item"), ("", ""),
    ]
    for (word, expected) in cases { #expect(_withArticle(word) == expected) }
    #expect(_withArticle(Animal.self) == "an Animal")
  }

  @Test func typeMismatchesSayAnArrayAndAnInt() throws {
    let zoo = RequestSet(Animal.zoo)
    let tags = try #require(throws: RequestSetError.self) { try zoo.filter("tags", value: 3).fetch() }
    #expect(
      tags.message
        == #"Key "tags" of Animal holds array values, so it can never match 3, which is a number. Pass an array or nil."#
    )
    let age = try #require(throws: RequestSetError.self) { try zoo.filter("age", value: [1, 2]).fetch() }
    #expect(
      age.message
        == #"Key "age" of Animal holds number values, so it can never match [1, 2], which is an array. Pass a number or nil."#
    )
    let count = try #require(throws: RequestSetError.self) { try zoo.filter("tags.@count == {1}").fetch() }
    #expect(count.message.contains("which is an array. Compare it with a number."))
    let text = try #require(throws: RequestSetError.self) { try RequestFilter<Animal>(format: "name BEGINSWITH {1}") }
    #expect(text.message.contains(", an array, at offset"))
  }

  @Test func aRecordThatCannotBeBuiltIsAnAnimal() throws {
    let store = MemoryStore<Animal>()
    let error = try #require(throws: RequestSetError.self) {
      try RequestSet(store).filter("name", value: "Bob").firstOrInsert()
    }
    #expect(error.code == .decodingFailed || error.code == .tooComplex)
    #expect(error.message.contains("make an Animal from"))
  }
}
