import Foundation
@_spi(Reflection) import Swift

/// One field of a record type, reached from a string key (`"owner.city"`) or from a key
/// path (`\Animal.owner?.city`): its key, the kind of value it holds, and how a store
/// reads it. Filters, sorts (`sortBy(\.age)`, `sortBy(SortDescriptor(\.age))`), index keys
/// and translated predicates all find their field here, so a key path and the string key
/// it names always meet in the same field.
///
/// A key path is matched against the key paths the standard library's reflection lists
/// for the type's stored properties (see ``_StoredPaths``), never taken apart from its
/// description: `\.age` is the field `age` because reflection gives the same key path for
/// the stored property `age`, and a computed property, which reflection does not list,
/// names no field. The names a key path chains through are the field's key unless the
/// type's `CodingKeys` rename them, which the type's stored records confirm (see
/// `_SchemaProbe.confirms`).
///
/// How the field is read follows from the type's field model (see `_FieldModel`):
/// - `.reflected`: straight from the stored property of records in memory (and from the
///   record's own encoded field in a ``LogStore``);
/// - `.codable`: through the type's `Codable` conformance, with the reason (a renamed key,
///   a class, a custom `encode(to:)`, a type reflection cannot read). Its answers are the
///   encoded values', the same on every store.
struct _ResolvedField: Sendable, Equatable, CustomStringConvertible {
  /// How records in memory read a field.
  enum Reading: Sendable, Equatable {
    /// Straight from the stored property, a value of the named Swift type.
    case reflected(typeName: String)
    /// Through the type's `Codable` conformance, for the reason given.
    case codable(why: String)
  }

  /// The dotted key the records encode the field under.
  let key: String
  /// The kind of value a non-nil field holds, when reflection knows it.
  let kind: _FieldKind?
  /// How records in memory read it.
  let reading: Reading

  /// `"age (Int, reflected)"`, or `"label (Codable: …)"`, for `explain()`.
  var description: String {
    switch reading {
    case .reflected(let typeName): return "\(key) (\(typeName), reflected)"
    case .codable(let why): return "\(key) (Codable: \(why))"
    }
  }

  /// The field a string key names, as records of the type are read now.
  ///
  /// - Parameters:
  ///   - key: A dotted key.
  ///   - plan: The type's field model at this moment.
  ///   - root: The record type.
  /// - Returns: The field; its reading is `.codable` for a key the model reads through
  ///   `Codable` (or that no stored property holds).
  static func named(_ key: String, in plan: _FieldPlan, root: Any.Type) -> _ResolvedField {
    if case .reflected(_, let shape, _) = plan.route(key) {
      return _ResolvedField(key: key, kind: shape.kind, reading: .reflected(typeName: shape.typeName))
    }
    return _ResolvedField(key: key, kind: nil, reading: .codable(why: _codableReason(key, plan, root)))
  }

  /// The field a key path names, when it is a chain of stored properties whose key the
  /// type's stored records confirm; nil otherwise, and while the records cannot tell yet
  /// (see ``_fieldKey(_:root:)``).
  ///
  /// - Parameters:
  ///   - keyPath: A key path from `root`.
  ///   - root: The record type.
  /// - Returns: The field, read as the type's field model says now.
  static func named(by keyPath: AnyKeyPath, root: Any.Type) -> _ResolvedField? {
    guard let key = _fieldKey(keyPath, root: root) else { return nil }
    return named(key, in: _FieldModel.of(root).plan, root: root)
  }

  /// Why a key path names no field a store can read, so that a store that keeps records
  /// encoded decodes each record to test it; nil when it names one.
  ///
  /// ```swift
  /// _ResolvedField.whyNoField(\Menagerie.title, root: Menagerie.self)
  /// // "CodingKeys or encode(to:) store it under another key than \"title\""
  /// ```
  static func whyNoField(_ keyPath: AnyKeyPath, root: Any.Type) -> String? {
    guard let named = _storedFieldKey(keyPath, root: root) else {
      return "not a stored property: a computed property or a subscript"
    }
    guard _fieldKey(keyPath, root: root) == nil else { return nil }
    if _SchemaProbe.confirms(keyPath, key: named, root: root) == nil {
      return "no stored record has shown yet which key it is stored under"
    }
    return "CodingKeys or encode(to:) store it under another key than \"\(named)\""
  }

  /// Why the model reads `key` through `Codable`.
  private static func _codableReason(_ key: String, _ plan: _FieldPlan, _ root: Any.Type) -> String {
    guard let shape = plan.shape else {
      return "reflection cannot read \(root) (a class, an enum, or no stored property it can read)"
    }
    let first = _DottedKey.split(key)[0]
    guard let field = shape.fields.first(where: { $0.name == first }) else {
      if _StoredPaths.of(root).isStoredProperty(first) {
        return "reflection cannot read the stored property \(first)"
      }
      return "no stored property is named \"\(first)\": a key CodingKeys or encode(to:) write"
    }
    if plan.status[first] == .differs {
      return "\(first) encodes differently from its stored \(field.shape.typeName)"
    }
    return "\(key) is not a stored property of \(field.shape.typeName)"
  }
}

/// The stored properties of a record type that chains of stored properties reach, each with
/// the key path reflection gives for it: how a key path finds the field it names.
///
/// Reflection (`_forEachFieldWithKeyPath`) lists a struct's or a class's stored properties
/// with their key paths; nested ones are reached by appending, so `\Animal.home.city` is
/// found as `\Animal.home` appending `\Home.city`, and compares equal to the key path a
/// program writes. A chain through an optional (`\Animal.owner?.city`) cannot be built
/// that way (an optional-chaining component has no key path of its own), nor one through
/// a class (a class property's key path is of another kind than reflection's), so for those
/// the names the key path's description gives are accepted only when each one is a stored
/// property, at its depth, of the type reflection found there.
final class _StoredPaths: Sendable {
  /// The names of the stored properties below one value, by name, and whether each holds
  /// an optional.
  struct Node: Sendable {
    var children: [String: Node] = [:]
    /// The value is an optional: key paths chain through it with `?`.
    var optional = false
    /// The value is a class instance: its properties' key paths are of another kind.
    var isClass = false
    /// Key paths below this value cannot be found by comparing them with reflection's.
    var isOpaque: Bool { optional || isClass }
  }

  /// Key path to the names it chains through, outermost first.
  private let paths: [_KeyPathKey: [String]]
  /// Every stored property reached, by name, for chains through optionals.
  private let root: Node
  /// The record type's name as key paths describe it (`\Animal.age`).
  private let typeName: String

  private init(_ type: Any.Type) {
    var paths: [_KeyPathKey: [String]] = [:]
    root = Self._collect(type, prefix: nil, names: [], depth: 0, into: &paths)
    self.paths = paths
    typeName = String(describing: type)
  }

  private static let _cache = _Lock<[ObjectIdentifier: _StoredPaths]>([:])

  /// The stored paths of `type`, listed on first use.
  static func of(_ type: Any.Type) -> _StoredPaths {
    let id = ObjectIdentifier(type)
    if let known = _cache.withLock({ $0[id] }) { return known }
    let made = _StoredPaths(type)
    return _cache.withLock { cache in
      if let known = cache[id] { return known }
      cache[id] = made
      return made
    }
  }

  /// Whether the record type has a stored property of that name.
  func isStoredProperty(_ name: String) -> Bool { root.children[name] != nil }

  /// The record type's stored properties by name, each with the name of one stored
  /// property below it (the first by name), or nil when it holds none of its own.
  var properties: [String: String?] { root.children.mapValues { $0.children.keys.min() } }

  /// The names of the stored properties `keyPath` chains through, outermost first; nil
  /// when it is not a chain of stored properties (a computed property, a subscript).
  func names(of keyPath: AnyKeyPath) -> [String]? {
    if let known = paths[_KeyPathKey(keyPath: keyPath)] { return known }
    // Only a chain through an optional or a class is missing from `paths`.
    let text = String(describing: keyPath)
    let prefix = "\\" + typeName + "."
    guard text.hasPrefix(prefix) else { return nil }
    var names: [String] = []
    var node = root
    var opaque = false
    for part in text.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false) {
      var name = Substring(part)
      while let last = name.last, last == "?" || last == "!" { name = name.dropLast() }
      guard let next = node.children[String(name)] else { return nil }
      if node.isOpaque { opaque = true }
      names.append(String(name))
      node = next
    }
    // A chain through neither was in `paths` if it named stored properties.
    return opaque || node.optional ? names : nil
  }

  /// How many entries a type lists at most, and how deep: a bound on the work for types
  /// that nest deeply or hold many fields.
  private static let _maxEntries = 2_048
  private static let _maxDepth = 6

  private static func _collect(
    _ type: Any.Type, prefix: AnyKeyPath?, names: [String], depth: Int,
    into paths: inout [_KeyPathKey: [String]]
  ) -> Node {
    var node = Node()
    node.isClass = type is AnyClass
    guard depth < _maxDepth, _mayHoldProperties(type) else { return node }
    // One stored property: its key path when there is one, and what is below it.
    func add(_ name: String, _ valueType: Any.Type, _ keyPath: AnyKeyPath?) -> Bool {
      guard paths.count < _maxEntries else { return false }
      let chain = names + [name]
      // Below an optional or a class no key path can be appended: only the names are kept.
      let full: AnyKeyPath? = keyPath.flatMap { depth == 0 ? $0 : prefix?.appending(path: $0) }
      if let full { paths[_KeyPathKey(keyPath: full)] = chain }
      if let optional = valueType as? any _OptionalWrapping.Type {
        var child = _collect(optional._wrappedType, prefix: nil, names: chain, depth: depth + 1, into: &paths)
        child.optional = true
        node.children[name] = child
      } else {
        node.children[name] = _collect(valueType, prefix: full, names: chain, depth: depth + 1, into: &paths)
      }
      return true
    }
    if node.isClass {
      // Reflection gives a class's stored properties without key paths (`.classType`,
      // spelled by its raw value: the static is a `var`, which strict concurrency does not
      // let us read).
      _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1 << 0)) { cName, _, valueType, _ in
        add(String(cString: cName), valueType, nil)
      }
      return node
    }
    func open<T>(_: T.Type) {
      _ = _forEachFieldWithKeyPath(of: T.self) { cName, keyPath in
        add(String(cString: cName), Swift.type(of: keyPath).valueType, keyPath)
      }
    }
    _openExistential(type, do: open)
    return node
  }

  /// Whether the stored properties of `type` are fields of its own: not for the scalars,
  /// collections and raw-value types that encode as one value.
  private static func _mayHoldProperties(_ type: Any.Type) -> Bool {
    if type is any RawRepresentable.Type || type is any _ArrayShaped.Type
      || type is any _UnshapedCollection.Type
      || type is any _OptionalWrapping.Type || type == FieldValue.self || type == Data.self
      || type == URL.self
      || type == Bool.self || type == UUID.self
    {
      return false
    }
    return !_isTwinType(type, ordered: false)
  }
}

/// Optionals name their wrapped type for `_StoredPaths`.
protocol _OptionalWrapping {
  static var _wrappedType: Any.Type { get }
}

extension Optional: _OptionalWrapping {
  static var _wrappedType: Any.Type { Wrapped.self }
}
