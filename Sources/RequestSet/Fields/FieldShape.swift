@_spi(Reflection) import Swift
import Foundation

/// Reads the value of one type at a raw pointer as the ``FieldValue`` that `_FieldEncoder`
/// would encode it to.
typealias _FieldRead = (UnsafeRawPointer) -> FieldValue

/// How a value of one Swift type reads as a ``FieldValue`` straight from memory, found once
/// per type through the standard library's reflection: the reflected half of the field
/// model (the other half is the encoded row, see `_FieldModel`).
///
/// A shape exists only for types whose synthesized encoding it reproduces: the scalars
/// `_FieldEncoder` knows (`String`, the integers, `Double`, `Float`, `Bool`, `Decimal`,
/// `Date`, `UUID`, `URL`), types with a raw value (enums), arrays and optionals of those,
/// and structs made of them (a nested struct reads as an object without the keys of its
/// nil optionals, as `encodeIfPresent` leaves them out). Whether a record type's encoding
/// really is the synthesized one is for `_FieldModel` to confirm against encoded records.
///
/// `@unchecked Sendable`: every property is a `let` set in `init`, and the closures capture
/// only other shapes, offsets and metatypes, all immutable.
final class _FieldShape: @unchecked Sendable {
  /// The kind of a non-nil value.
  let kind: _FieldKind
  /// The whole value (`.null` for a nil optional).
  let read: _FieldRead
  /// For an optional: the address of its wrapped value, or nil when it is nil.
  let payload: ((UnsafeRawPointer) -> UnsafeRawPointer?)?
  /// For an optional: the wrapped value's shape.
  let wrapped: _FieldShape?
  /// For a struct read as an object: its stored properties in declaration order.
  let fields: [(name: String, offset: Int, shape: _FieldShape)]
  /// A short name of the type, for `explain()`.
  let typeName: String
  /// How many dotted keys this value and the values nested in it hold (1 for a scalar).
  let keyCount: Int
  /// For the common scalars and their optionals: a reader by slot over records at `base`,
  /// `stride` apart, of the value at `offset` in each, as one closure with nothing in
  /// between (what a scan over records in memory calls per record).
  let slotReader: ((_ base: UnsafeRawPointer, _ stride: Int, _ offset: Int) -> (Int) -> FieldValue)?

  init(
    kind: _FieldKind, typeName: String, read: @escaping _FieldRead,
    payload: ((UnsafeRawPointer) -> UnsafeRawPointer?)? = nil, wrapped: _FieldShape? = nil,
    fields: [(name: String, offset: Int, shape: _FieldShape)] = [],
    slotReader: ((_ base: UnsafeRawPointer, _ stride: Int, _ offset: Int) -> (Int) -> FieldValue)? = nil
  ) {
    self.slotReader = slotReader
    self.kind = kind
    self.typeName = typeName
    self.read = read
    self.payload = payload
    self.wrapped = wrapped
    self.fields = fields
    keyCount = wrapped?.keyCount ?? fields.reduce(1) { $0 + $1.shape.keyCount }
  }

  var isOptional: Bool { payload != nil }

  /// The reader of the value at `parts` (dotted key components below this value), or nil
  /// when the shape has no such field. Arrays are not entered: keys inside arrays are not
  /// string keys.
  func resolve(_ parts: ArraySlice<String>) -> _FieldRead? {
    guard let first = parts.first else { return read }
    if let payload, let wrapped {
      guard let inner = wrapped.resolve(parts) else { return nil }
      return { p in payload(p).map(inner) ?? .null }
    }
    guard let field = fields.first(where: { $0.name == first }), let inner = field.shape.resolve(parts.dropFirst())
    else { return nil }
    let offset = field.offset
    return { p in inner(p + offset) }
  }

  /// The shape at `parts` below this value, through optionals.
  func shape(at parts: ArraySlice<String>) -> _FieldShape? {
    guard let first = parts.first else { return self }
    if let wrapped, isOptional { return wrapped.shape(at: parts) }
    return fields.first(where: { $0.name == first })?.shape.shape(at: parts.dropFirst())
  }

  // MARK: Building shapes

  /// Shapes already built, by type (nil: the type has none).
  private static let _cache = _Lock<[ObjectIdentifier: _FieldShape?]>([:])

  /// The shape of `type`, or nil when reflection cannot read it as it encodes.
  static func of(_ type: Any.Type) -> _FieldShape? {
    if let known = _cache.withLock({ $0[ObjectIdentifier(type)] }) { return known }
    let made = _make(type, _ShapeWalk())
    _cache.withLock { $0[ObjectIdentifier(type)] = made }
    return made
  }

  /// How deep a type's stored properties, optionals and arrays may nest for a shape to be
  /// built; deeper values go through `Codable`.
  static let maxTypeDepth = 8

  /// Builds the shape of a type met `walk.depth` levels inside the type `of(_:)` was asked
  /// for. A type that contains itself (`struct Node { var children: [Node] }`: comment
  /// threads, categories, org charts) has no shape, since a shape is built eagerly for
  /// every level: its values go through `Codable`, which follows the value's own depth.
  static func _make(_ type: Any.Type, _ walk: _ShapeWalk) -> _FieldShape? {
    guard walk.depth < maxTypeDepth, !walk.visiting.contains(ObjectIdentifier(type)) else { return nil }
    // A shape found complete elsewhere is the same here (only the nils depend on the walk).
    if let known = _cache.withLock({ $0[ObjectIdentifier(type)] }), let known { return known }
    if let scalar = _scalarShape(type) { return scalar }
    let inner = walk.entering(type)
    if let optional = type as? any _OptionalShaped.Type { return optional._optionalShape(inner) }
    if let array = type as? any _ArrayShaped.Type { return array._arrayShape(inner) }
    // A `FieldValue`, a dictionary or a set encodes in a way of its own: Codable reads it.
    if type == FieldValue.self || type is any _UnshapedCollection.Type { return nil }
    if let raw = type as? any RawRepresentable.Type { return _rawShape(raw) }
    return _structShape(type, inner)
  }

  private static func _rawShape<R: RawRepresentable>(_ type: R.Type) -> _FieldShape? {
    guard !(R.self is AnyClass), let raw = _scalarShape(R.RawValue.self) else { return nil }
    return _FieldShape(kind: raw.kind, typeName: "\(R.self)") { p in
      withUnsafePointer(to: p.assumingMemoryBound(to: R.self).pointee.rawValue) { raw.read(UnsafeRawPointer($0)) }
    }
  }

  /// The shape of a record type: its stored properties that reflection can read (the
  /// others, and the keys they encode under, go through `Codable`); nil when it has none.
  static func ofRecord(_ type: Any.Type) -> _FieldShape? {
    _structShape(type, _ShapeWalk().entering(type), partial: true)
  }

  /// A struct's shape. A nested struct (`partial` false) has one only when every stored
  /// property can be read, so that its whole value reads as it encodes.
  private static func _structShape(_ type: Any.Type, _ walk: _ShapeWalk, partial: Bool = false) -> _FieldShape? {
    func open<T>(_: T.Type) -> _FieldShape? {
      guard !(T.self is AnyClass), T.self is any Encodable.Type else { return nil }
      var fields: [(name: String, offset: Int, shape: _FieldShape)] = []
      var readable = true
      let isStruct = _forEachFieldWithKeyPath(of: T.self, options: _EachFieldOptions()) { name, keyPath in
        guard let offset = MemoryLayout<T>.offset(of: keyPath),
          let shape = _make(Swift.type(of: keyPath).valueType, walk)
        else {
          readable = partial
          return partial
        }
        fields.append((String(cString: name), offset, shape))
        return true
      }
      guard isStruct, readable, !fields.isEmpty else { return nil }
      let all = fields
      return _FieldShape(kind: .object, typeName: "\(T.self)", read: { p in
        var object: [String: FieldValue] = Dictionary(minimumCapacity: all.count)
        for field in all {
          if let payload = field.shape.payload, payload(p + field.offset) == nil { continue }  // as encodeIfPresent
          object[field.name] = field.shape.read(p + field.offset)
        }
        return .object(object)
      }, fields: all)
    }
    return _openExistential(type, do: open)
  }

  /// The shapes of the scalars `_FieldEncoder` encodes without a container, or through
  /// one single value (`Date`, `UUID`), and of the optionals of the commonest ones.
  private static func _scalarShape(_ type: Any.Type) -> _FieldShape? {
    // Written out per type, not through a generic helper: a generic closure would read
    // each value through the type's metadata, many times slower in a scan.
    func shape(
      _ kind: _FieldKind, _ name: String, _ at: @escaping (_ p: UnsafeRawPointer, _ offset: Int) -> FieldValue
    ) -> _FieldShape {
      _FieldShape(
        kind: kind, typeName: name, read: { at($0, 0) },
        slotReader: { base, stride, offset in { slot in at(base + slot &* stride, offset) } })
    }
    switch type {
    case is String.Type: return shape(.string, "String") { .string($0.load(fromByteOffset: $1, as: String.self)) }
    case is Int.Type: return shape(.number, "Int") { .int($0.load(fromByteOffset: $1, as: Int.self)) }
    case is Int8.Type: return shape(.number, "Int8") { .int(Int($0.load(fromByteOffset: $1, as: Int8.self))) }
    case is Int16.Type: return shape(.number, "Int16") { .int(Int($0.load(fromByteOffset: $1, as: Int16.self))) }
    case is Int32.Type: return shape(.number, "Int32") { .int(Int($0.load(fromByteOffset: $1, as: Int32.self))) }
    case is Int64.Type: return shape(.number, "Int64") { .int(Int($0.load(fromByteOffset: $1, as: Int64.self))) }
    case is UInt.Type:
      return shape(.number, "UInt") {
        let v = $0.load(fromByteOffset: $1, as: UInt.self)
        return Int(exactly: v).map(FieldValue.int) ?? .uint(UInt64(v))
      }
    case is UInt8.Type: return shape(.number, "UInt8") { .int(Int($0.load(fromByteOffset: $1, as: UInt8.self))) }
    case is UInt16.Type: return shape(.number, "UInt16") { .int(Int($0.load(fromByteOffset: $1, as: UInt16.self))) }
    case is UInt32.Type: return shape(.number, "UInt32") { .int(Int($0.load(fromByteOffset: $1, as: UInt32.self))) }
    case is UInt64.Type:
      return shape(.number, "UInt64") {
        let v = $0.load(fromByteOffset: $1, as: UInt64.self)
        return Int(exactly: v).map(FieldValue.int) ?? .uint(v)
      }
    case is Double.Type: return shape(.number, "Double") { .double($0.load(fromByteOffset: $1, as: Double.self)) }
    case is Float.Type: return shape(.number, "Float") { .double(Double($0.load(fromByteOffset: $1, as: Float.self))) }
    case is Bool.Type: return shape(.bool, "Bool") { .bool($0.load(fromByteOffset: $1, as: Bool.self)) }
    case is Decimal.Type: return shape(.number, "Decimal") { .decimal($0.load(fromByteOffset: $1, as: Decimal.self)) }
    case is Date.Type:
      return shape(.number, "Date") { .double($0.load(fromByteOffset: $1, as: Date.self).timeIntervalSinceReferenceDate) }
    case is UUID.Type: return shape(.string, "UUID") { .string($0.load(fromByteOffset: $1, as: UUID.self).uuidString) }
    case is URL.Type: return shape(.string, "URL") { .string($0.load(fromByteOffset: $1, as: URL.self).absoluteString) }
    default: return nil
    }
  }

  /// A by-slot reader for the commonest optional scalars (see ``slotReader``).
  static func _optionalSlotReader(_ type: Any.Type) -> ((UnsafeRawPointer, Int, Int) -> (Int) -> FieldValue)? {
    func make(_ at: @escaping (UnsafeRawPointer, Int) -> FieldValue) -> (UnsafeRawPointer, Int, Int) -> (Int) -> FieldValue {
      { base, stride, offset in { slot in at(base + slot &* stride, offset) } }
    }
    switch type {
    case is String?.Type: return make { $0.load(fromByteOffset: $1, as: String?.self).map(FieldValue.string) ?? .null }
    case is Int?.Type: return make { $0.load(fromByteOffset: $1, as: Int?.self).map(FieldValue.int) ?? .null }
    case is Double?.Type: return make { $0.load(fromByteOffset: $1, as: Double?.self).map(FieldValue.double) ?? .null }
    case is Bool?.Type: return make { $0.load(fromByteOffset: $1, as: Bool?.self).map(FieldValue.bool) ?? .null }
    default: return nil
    }
  }
}

/// The types a shape is being built for, outermost first: what `_FieldShape._make` needs
/// to stop at a type that contains itself, and at types nested too deeply.
struct _ShapeWalk {
  var depth = 0
  var visiting: Set<ObjectIdentifier> = []

  /// The walk one level inside `type`.
  func entering(_ type: Any.Type) -> _ShapeWalk {
    var inner = self
    inner.depth += 1
    inner.visiting.insert(ObjectIdentifier(type))
    return inner
  }
}

/// Optionals open their wrapped type for `_FieldShape`.
protocol _OptionalShaped {
  static func _optionalShape(_ walk: _ShapeWalk) -> _FieldShape?
}

extension Optional: _OptionalShaped {
  static func _optionalShape(_ walk: _ShapeWalk) -> _FieldShape? {
    // An optional of an optional encodes its inner nil in a way of its own.
    guard !(Wrapped.self is any _OptionalShaped.Type), let wrapped = _FieldShape._make(Wrapped.self, walk) else {
      return nil
    }
    // A single-payload enum keeps its payload at offset 0; only the tag needs reading.
    let payload: (UnsafeRawPointer) -> UnsafeRawPointer? = { p in
      if case .none = p.assumingMemoryBound(to: Wrapped?.self).pointee { return nil }
      return p
    }
    let inner = wrapped.read
    return _FieldShape(
      kind: wrapped.kind, typeName: wrapped.typeName + "?", read: { p in payload(p).map(inner) ?? .null },
      payload: payload, wrapped: wrapped, slotReader: _FieldShape._optionalSlotReader(Self.self))
  }
}

/// Arrays open their element type for `_FieldShape`.
protocol _ArrayShaped {
  static func _arrayShape(_ walk: _ShapeWalk) -> _FieldShape?
}

extension Array: _ArrayShaped {
  static func _arrayShape(_ walk: _ShapeWalk) -> _FieldShape? {
    if Element.self == String.self {
      return _FieldShape(kind: .array, typeName: "[String]") { p in
        .array(p.assumingMemoryBound(to: [String].self).pointee.map(FieldValue.string))
      }
    }
    guard let element = _FieldShape._make(Element.self, walk) else { return nil }
    let read = element.read
    return _FieldShape(kind: .array, typeName: "[\(element.typeName)]") { p in
      p.assumingMemoryBound(to: [Element].self).pointee.withUnsafeBufferPointer { buffer in
        .array(buffer.indices.map { read(UnsafeRawPointer(buffer.baseAddress! + $0)) })
      }
    }
  }
}

/// Collections whose encoding `_FieldShape` does not reproduce (a dictionary's keys become
/// fields; a set's order is its own): `Codable` reads them.
protocol _UnshapedCollection {}
extension Dictionary: _UnshapedCollection {}
extension Set: _UnshapedCollection {}
