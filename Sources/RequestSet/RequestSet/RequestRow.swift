/// One row of ``RequestSet/values(_:)-(String...)`` or ``RequestGroups/fetch()``: values by
/// key, in the order the keys were asked for.
///
/// A row reads like the `[String: FieldValue]` dictionary it replaces: subscript it by key,
/// iterate its `(key, value)` pairs, compare it with a dictionary literal. Unlike a
/// dictionary it keeps its keys in order (the keys given to `values`; a group's keys, then
/// its aggregates, as given), so it prints the same way on every run and every store.
///
/// ```swift
/// let row = try animals.sortBy("id").values("name", "owner.city")[0]
/// row["name"]                  // Optional(.string("Micky"))
/// row.keys                     // ["name", "owner.city"]
/// print(row)                   // ["name": "Micky", "owner.city": "Burbank"]
/// for (key, value) in row { print(key, value) }   // name "Micky", then owner.city "Burbank"
/// let plain = row.dictionary   // [String: FieldValue], for code that needs a dictionary
/// ```
///
/// Two rows are equal when they hold the same keys in the same order with equal values
/// (`FieldValue`'s equality: `.int(1) == .double(1)`); compare ``dictionary`` to ignore
/// the order. A key appears once: assigning to a key the row holds keeps its place, a new
/// key goes last, and assigning `nil` removes the key, as with a dictionary.
public struct RequestRow: Sendable {
  /// The keys and where each one's value is, shared by every row of one result.
  var _layout: _RowLayout
  /// The values, in the order of `_layout.keys`.
  var _values: [FieldValue]

  init(_layout: _RowLayout, _values: [FieldValue]) {
    self._layout = _layout
    self._values = _values
  }

  /// The row's keys, in order.
  ///
  /// ```swift
  /// try animals.values("name", "owner.city")[0].keys   // ["name", "owner.city"]
  /// ```
  /// - Complexity: O(1).
  public var keys: [String] { _layout.keys }

  /// The row's values, in the order of ``keys``.
  ///
  /// ```swift
  /// try animals.sortBy("id").values("name", "age")[0].values   // [.string("Micky"), .int(3)]
  /// ```
  /// - Complexity: O(1).
  public var values: [FieldValue] { _values }

  /// The row as a dictionary, for code written against `[String: FieldValue]`; the order
  /// of the keys is lost.
  ///
  /// ```swift
  /// let plain: [[String: FieldValue]] = try animals.values("name", "age").map(\.dictionary)
  /// ```
  /// - Complexity: O(*n*), where *n* is the number of keys.
  public var dictionary: [String: FieldValue] {
    Dictionary(uniqueKeysWithValues: zip(_layout.keys, _values))
  }

  /// The value for `key`, or nil when the row has no such key; assigning replaces the
  /// value in its place, appends a new key, or removes the key when the new value is nil.
  ///
  /// ```swift
  /// var row = try animals.sortBy("id").values("name", "age")[0]
  /// row["name"]                  // Optional(.string("Micky"))
  /// row["weight"]                // nil: not asked for
  /// row["age"] = .int(4)         // ["name": "Micky", "age": 4]
  /// row["note"] = .string("new") // ["name": "Micky", "age": 4, "note": "new"]
  /// row["name"] = nil            // ["age": 4, "note": "new"]
  /// ```
  /// - Complexity: reading O(1) on average; assigning a new key or nil O(*n*).
  public subscript(key: String) -> FieldValue? {
    get { _layout.positions[key].map { _values[$0] } }
    set {
      if let i = _layout.positions[key] {
        if let newValue {
          _values[i] = newValue
        } else {
          var keys = _layout.keys
          keys.remove(at: i)
          _values.remove(at: i)
          _layout = _RowLayout(uniqueKeys: keys)
        }
      } else if let newValue {
        _layout = _RowLayout(uniqueKeys: _layout.keys + [key])
        _values.append(newValue)
      }
    }
  }

  /// The position of `key` in the row, or nil when the row has no such key.
  ///
  /// ```swift
  /// let row = try animals.values("name", "owner.city")[0]
  /// row.index(forKey: "owner.city")   // Optional(1)
  /// ```
  /// - Complexity: O(1) on average.
  public func index(forKey key: String) -> Int? { _layout.positions[key] }
}

/// A result's keys, once: each row of a result holds only its values and shares this.
final class _RowLayout: Sendable {
  /// Distinct keys, in order.
  let keys: [String]
  /// Each key's position in `keys`.
  let positions: [String: Int]

  /// A layout of keys known to be distinct.
  init(uniqueKeys keys: [String]) {
    self.keys = keys
    var positions: [String: Int] = [:]
    positions.reserveCapacity(keys.count)
    for (i, key) in keys.enumerated() { positions[key] = i }
    self.positions = positions
  }

  /// The layout of rows built from `keys`, which may repeat (`values("name", "name")`, a
  /// group key named like an aggregate), and where each of `keys` goes in such a row: a
  /// repeated key keeps its first place, and the last value written to it wins, as when
  /// the same values fill a dictionary in order.
  static func slots(for keys: [String]) -> (layout: _RowLayout, slots: [Int]) {
    var distinct: [String] = []
    var positions: [String: Int] = [:]
    let slots = keys.map { key in
      if let i = positions[key] { return i }
      positions[key] = distinct.count
      distinct.append(key)
      return distinct.count - 1
    }
    return (_RowLayout(uniqueKeys: distinct), slots)
  }

  /// Rows of `keys` from value lists in the order of `keys` (as `slots(for:)` places them).
  static func rows(_ keys: [String], _ valueLists: [[FieldValue]]) -> [RequestRow] {
    let (layout, slots) = slots(for: keys)
    let plain = layout.keys.count == keys.count
    return valueLists.map { list in
      if plain { return RequestRow(_layout: layout, _values: list) }
      var values = [FieldValue](repeating: .null, count: layout.keys.count)
      for (slot, value) in zip(slots, list) { values[slot] = value }
      return RequestRow(_layout: layout, _values: values)
    }
  }
}

extension RequestRow: RandomAccessCollection {
  /// A position in the row: 0 for the first key.
  public typealias Index = Int

  /// The position of the first key: 0.
  ///
  /// - Complexity: O(1).
  public var startIndex: Int { 0 }

  /// The position after the last key: the number of keys.
  ///
  /// - Complexity: O(1).
  public var endIndex: Int { _values.count }

  /// The key and value at `position`, as a dictionary's element reads.
  ///
  /// ```swift
  /// let first = try animals.values("name", "age")[0][0]   // (key: "name", value: .string("Micky"))
  /// ```
  /// - Complexity: O(1).
  public subscript(position: Int) -> (key: String, value: FieldValue) {
    (_layout.keys[position], _values[position])
  }
}

extension RequestRow: ExpressibleByDictionaryLiteral {
  /// A row of these keys and values, in this order; a repeated key keeps its first place
  /// and takes its last value.
  ///
  /// ```swift
  /// let row: RequestRow = ["name": .string("Rex"), "owner.city": .string("Oslo")]
  /// try animals.filter("id", value: 3).values("name", "owner.city") == [row]   // false: Rex has no owner
  /// ```
  public init(dictionaryLiteral elements: (String, FieldValue)...) {
    let (layout, slots) = _RowLayout.slots(for: elements.map(\.0))
    var values = [FieldValue](repeating: .null, count: layout.keys.count)
    for (slot, element) in zip(slots, elements) { values[slot] = element.1 }
    self.init(_layout: layout, _values: values)
  }
}

extension RequestRow: Hashable {
  /// Whether both rows hold the same keys, in the same order, with equal values.
  ///
  /// ```swift
  /// let a: RequestRow = ["name": .string("Rex"), "age": .int(5)]
  /// a == ["name": .string("Rex"), "age": .double(5)]   // true: 5 == 5.0
  /// a == ["age": .int(5), "name": .string("Rex")]      // false: another order
  /// a.dictionary == ["age": .int(5), "name": .string("Rex")]   // true
  /// ```
  public static func == (lhs: RequestRow, rhs: RequestRow) -> Bool {
    (lhs._layout === rhs._layout || lhs._layout.keys == rhs._layout.keys) && lhs._values == rhs._values
  }

  /// Hashes the keys and values in order, consistently with `==`.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(_layout.keys)
    hasher.combine(_values)
  }
}

extension RequestRow: CustomStringConvertible, CustomDebugStringConvertible {
  /// The row as a dictionary literal, keys in order: `["name": "Rex", "owner.city": nil]`;
  /// an empty row prints `[:]`. Arrays of rows print the same way.
  ///
  /// ```swift
  /// print(try animals.sortBy("id").values("name", "owner.city").prefix(2))
  /// // [["name": "Micky", "owner.city": "Burbank"], ["name": "Daisy", "owner.city": "Oslo"]]
  /// ```
  public var description: String {
    if _values.isEmpty { return "[:]" }
    var text = "["
    for (i, key) in _layout.keys.enumerated() {
      if i > 0 { text += ", " }
      text += String(reflecting: key) + ": " + _values[i].description
    }
    return text + "]"
  }

  /// The same text as ``description``.
  public var debugDescription: String { description }
}

extension Dictionary where Key == String, Value == FieldValue {
  /// The keys and values of a ``RequestRow``, without its order.
  ///
  /// ```swift
  /// let plain = [String: FieldValue](try animals.values("name", "age")[0])
  /// ```
  /// - Complexity: O(*n*), where *n* is the number of keys.
  public init(_ row: RequestRow) {
    self = row.dictionary
  }
}
