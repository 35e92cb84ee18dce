import Foundation
import Testing

@testable import RequestSet

/// One typed condition on `Menagerie` and the same test in plain Swift.
private struct TypedMenagerieCondition: CustomStringConvertible {
  let description: String
  let typed: @Sendable (RequestSet<Menagerie>) -> RequestSet<Menagerie>
  let reference: (Menagerie) -> Bool

  static func random(_ rng: inout SeededRandom, _ data: [Menagerie]) -> TypedMenagerieCondition {
    let pick = data[Int(rng.next() % UInt64(data.count))]
    switch rng.next() % 11 {
    case 0:
      let v = pick.name
      return .init(description: "\\.name == \(v)", typed: { $0.filter(\.name == v) }) { $0.name == v }
    case 1:
      let v = pick.born
      return .init(description: "\\.born < \(v)", typed: { $0.filter(\.born < v) }) { $0.born < v }
    case 2:
      let v = pick.tag
      return .init(description: "\\.tag == \(v)", typed: { $0.filter(\.tag == v) }) { $0.tag == v }
    case 3:
      let v = pick.diet
      return .init(description: "\\.diet != \(v)", typed: { $0.filter(\.diet != v) }) { $0.diet != v }
    case 4:
      let v = Menagerie.cities[Int(rng.next() % 3)]
      return .init(description: "\\.pen?.city == \(v)", typed: { $0.filter(\.pen?.city == v) }) {
        $0.pen?.city == v
      }
    case 5:
      let v = Int(rng.next() % 4)
      return .init(description: "\\.pen?.number >= \(v)", typed: { $0.filter(\.pen?.number >= v) }) {
        ($0.pen?.number).map { $0 >= v } ?? false
      }
    case 6:
      let v = Double(rng.next() % 40) / 4
      return .init(description: "\\.weight > \(v)", typed: { $0.filter(\.weight > v) }) { $0.weight > v }
    case 7:
      let v = pick.temperature
      return .init(description: "\\.temperature == \(v.value)", typed: { $0.filter(\.temperature == v) }) {
        $0.temperature == v
      }
    case 8:
      let v = pick.keeper.name
      return .init(description: "\\.keeper.name == \(v)", typed: { $0.filter(\.keeper.name == v) }) {
        $0.keeper.name == v
      }
    case 9:
      // Stored under the key "label": the typed form reads the property.
      let v = pick.title
      return .init(description: "\\.title <= \(v)", typed: { $0.filter(\.title <= v) }) { $0.title <= v }
    default:
      let v = pick.nameLength
      return .init(description: "\\.nameLength == \(v)", typed: { $0.filter(\.nameLength == v) }) {
        $0.nameLength == v
      }
    }
  }
}

/// A typed sort on `Menagerie` and the same order in plain Swift (strictly less).
private struct TypedMenagerieSort: Sendable {
  let description: String
  let apply: @Sendable (RequestSet<Menagerie>) -> RequestSet<Menagerie>
  let less: @Sendable (Menagerie, Menagerie) -> Bool

  static let all: [TypedMenagerieSort] = [
    .init(description: "sortBy(\\.name)", apply: { $0.sortBy(\.name) }, less: { $0.name < $1.name }),
    .init(description: "sortBy(\\.born, .descending)", apply: { $0.sortBy(\.born, order: .descending) }) {
      $0.born > $1.born
    },
    .init(description: "sortBy(\\.title)", apply: { $0.sortBy(\.title) }, less: { $0.title < $1.title }),
    .init(description: "sortBy(\\.pen?.number)", apply: { $0.sortBy(\.pen?.number) }) {
      switch ($0.pen?.number, $1.pen?.number) {
      case (nil, .some): return true
      case (let a?, let b?): return a < b
      default: return false
      }
    },
    .init(description: "sortBy(\\.keeper.name)", apply: { $0.sortBy(\.keeper.name) }) {
      $0.keeper.name < $1.keeper.name
    },
    .init(
      description: "sortBy(SortDescriptor(\\.born, order: .reverse))",
      apply: { $0.sortBy(SortDescriptor(\.born, order: .reverse)) }, less: { $0.born > $1.born }),
    .init(
      description: "sortBy(SortDescriptor(\\.id, order: .reverse))",
      apply: { $0.sortBy(SortDescriptor(\.id, order: .reverse)) }, less: { $0.id > $1.id }),
  ]
}

/// Key paths and string keys meet in one resolved field (see `_ResolvedField`): a key path
/// finds its field through reflection's key paths, on every kind of field, on every store.
@Suite(.ownThreads) struct ResolvedFieldTests {
  static let data = Menagerie.random(count: 150, seed: 0x5E501)

  @Test func keyPathsFindTheStoredPropertiesTheyChainThrough() {
    let paths = _StoredPaths.of(Menagerie.self)
    #expect(paths.names(of: \Menagerie.name) == ["name"])
    #expect(paths.names(of: \Menagerie.born) == ["born"])
    // A nested struct, reached by appending reflection's key paths.
    #expect(paths.names(of: \Menagerie.temperature.value) == ["temperature", "value"])
    // A class field and a property of the class.
    #expect(paths.names(of: \Menagerie.keeper) == ["keeper"])
    #expect(paths.names(of: \Menagerie.keeper.name) == ["keeper", "name"])
    // Chains through an optional, by their stored properties' names.
    #expect(paths.names(of: \Menagerie.pen?.city) == ["pen", "city"])
    #expect(paths.names(of: \Menagerie.pen!.number) == ["pen", "number"])
    // The stored property's name, whatever CodingKeys call it.
    #expect(paths.names(of: \Menagerie.title) == ["title"])
    // No stored property: a computed one, one inside an optional, a subscript.
    #expect(paths.names(of: \Menagerie.nameLength) == nil)
    #expect(paths.names(of: \Menagerie.pen?.city.count) == nil)
    #expect(paths.names(of: \Menagerie.notes.count) == nil)
    #expect(paths.names(of: \Menagerie.notes[0]) == nil)
    #expect(_StoredPaths.of(Animal.self).names(of: \Animal.owner?.city) == ["owner", "city"])
  }

  @Test func aResolvedFieldSaysHowRecordsInMemoryReadIt() throws {
    _ = try MemoryStore(Self.data)
    let plan = _FieldModel.of(Menagerie.self).plan
    let name = try #require(_ResolvedField.named(by: \Menagerie.name, root: Menagerie.self))
    #expect(name == _ResolvedField.named("name", in: plan, root: Menagerie.self))
    #expect(name.description == "name (String, reflected)")
    #expect(
      _ResolvedField.named(by: \Menagerie.pen?.city, root: Menagerie.self)?.description
        == "pen.city (String, reflected)")
    #expect(
      _ResolvedField.named(by: \Menagerie.diet, root: Menagerie.self)?.description == "diet (Diet, reflected)"
    )
    #expect(_ResolvedField.named(by: \Menagerie.tag, root: Menagerie.self)?.kind == .string)
    // A renamed key and a computed property name no field a store could read.
    #expect(_ResolvedField.named(by: \Menagerie.title, root: Menagerie.self) == nil)
    #expect(_ResolvedField.named(by: \Menagerie.nameLength, root: Menagerie.self) == nil)
    // Through Codable, with the reason.
    #expect(
      _ResolvedField.named("label", in: plan, root: Menagerie.self).description
        == "label (Codable: no stored property is named \"label\": a key CodingKeys or encode(to:) write)")
    #expect(
      _ResolvedField.named("temperature", in: plan, root: Menagerie.self).description
        == "temperature (Codable: temperature encodes differently from its stored Celsius)")
    #expect(
      _ResolvedField.named("keeper.name", in: plan, root: Menagerie.self).description
        == "keeper.name (Codable: reflection cannot read the stored property keeper)")
  }

  @Test(arguments: StoreKind.allCases)
  func typedFiltersAndSortsOnEveryKindOfFieldMatchPlainSwift(kind: StoreKind) throws {
    let base = try kind.makeSet(of: Self.data)
    var rng = SeededRandom(seed: 0x5E501_0002)
    var nonTrivial = 0
    for i in 0..<250 {
      var set = base
      var expected = Self.data
      var text: [String] = []
      for _ in 0..<(1 + Int(rng.next() % 2)) {
        let c = TypedMenagerieCondition.random(&rng, Self.data)
        set = c.typed(set)
        expected = expected.filter(c.reference)
        text.append(c.description)
      }
      if rng.next() % 2 == 0 {
        let s = TypedMenagerieSort.all[Int(rng.next() % UInt64(TypedMenagerieSort.all.count))]
        set = s.apply(set)
        expected = expected.enumerated().sorted { a, b in
          if s.less(a.element, b.element) { return true }
          if s.less(b.element, a.element) { return false }
          return a.offset < b.offset
        }.map(\.element)
        text.append(s.description)
      }
      let want = expected.map(\.id)
      if !want.isEmpty && want.count < Self.data.count { nonTrivial += 1 }
      #expect(try set.fetch().map(\.id) == want, "query \(i) on \(kind): \(text)")
      #expect(set.count == want.count, "query \(i) on \(kind): \(text)")
    }
    #expect(nonTrivial > 80)
  }

  /// A typed condition and the string key its field is stored under answer alike, for
  /// reflected fields and fields read through Codable.
  @Test(arguments: StoreKind.allCases)
  func aKeyPathAndItsStringKeyMeetInOneField(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.data)
    for city in Menagerie.cities {
      #expect(
        try all.filter(\.pen?.city == city).fetch().map(\.id)
          == all.filter("pen.city", value: city).fetch().map(\.id))
    }
    let title = Self.data[3].title
    #expect(
      try all.filter(\.title == title).fetch().map(\.id)
        == all.filter("label", value: title).fetch().map(\.id))
    let keeper = Self.data[5].keeper.name
    #expect(
      try all.filter(\.keeper.name == keeper).fetch().map(\.id)
        == all.filter("keeper.name", value: keeper).fetch().map(\.id))
    #expect(try all.sortBy(\.born).fetch().map(\.id) == all.sortBy("born").fetch().map(\.id))
    #expect(
      try all.sortBy(SortDescriptor(\.born, order: .reverse)).fetch().map(\.id)
        == all.sortBy("born", order: .descending).fetch().map(\.id))
  }

  /// An index made from a key path indexes the field the key path resolves to, through an
  /// optional too; a key path with no stored field cannot be indexed.
  @Test(arguments: StoreKind.writable.filter { $0 == .memory || $0 == .log })
  func keyPathIndexesUseTheResolvedField(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Menagerie.self)
    try store.insert(contentsOf: Self.data)
    func index<V>(_ keyPath: KeyPath<Menagerie, V>) throws {
      if let memory = store as? MemoryStore<Menagerie> { try memory.createIndex(keyPath) }
      if let log = store as? LogStore<Menagerie> { try log.createIndex(keyPath) }
    }
    try index(\.pen?.city)
    let oslo = RequestSet(store).filter(\.pen?.city == "Oslo")
    #expect(try oslo.fetch().map(\.id) == Self.data.filter { $0.pen?.city == "Oslo" }.map(\.id))
    #expect(oslo.explain().contains("stage 1: index lookup on pen.city"), "\(oslo.explain())")
    #expect(throws: RequestSetError.self) { try index(\.nameLength) }
    #expect(throws: RequestSetError.self) { try index(\.title) }
  }

  /// On a LogStore, a key path with no field of its own is tested by decoding each record,
  /// and explain() says why; a key path that names a field reads it from the record's bytes.
  @Test func explainSaysWhyALogStoreDecodesForAKeyPath() throws {
    let store = try StoreKind.log.makeStore(of: Menagerie.self)
    try store.insert(contentsOf: Self.data)
    let set = RequestSet(store).filter(\.title == "t1").filter(\.name != "Ann1")
    #expect(try set.fetch().map(\.id) == Self.data.filter { $0.title == "t1" && $0.name != "Ann1" }.map(\.id))
    #expect(
      set.explain() == """
        RequestSet<Menagerie> over LogStore<Menagerie>
        stage 1: scan all records (~150 records)
          filter: \\Menagerie.title == "t1" AND \\Menagerie.name != "Ann1"
          decodes each record for: \\Menagerie.title == "t1"
          read through Codable: \\Menagerie.title (CodingKeys or encode(to:) store it under another key than "title")
        """)
    let computed = RequestSet(store).filter(\.nameLength > 3).explain()
    #expect(computed.contains("(not a stored property: a computed property or a subscript)"), "\(computed)")
    // Every key path names a field: nothing is decoded, no line.
    #expect(!RequestSet(store).filter(\.pen?.city == "Oslo").explain().contains("read through Codable"))
    // In memory a key path reads the stored property itself.
    let memory = try MemoryStore(Self.data)
    #expect(!RequestSet(memory).filter(\.title == "t1").explain().contains("read through Codable"))
  }
}
