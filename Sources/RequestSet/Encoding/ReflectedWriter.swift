import Foundation
@_spi(Reflection) import Swift
import Synchronization

/// Writes a record straight from its stored properties, read by reflection, in the bytes
/// its `Codable` encoding gives: the binary encoder's fast path for the types where the
/// two agree.
///
/// ```swift
/// // Animal: Int, String, String, Int, Double, String?, [String], Owner? (a struct)
/// _ReflectedWriter.of(Animal.self)   // a writer: every stored property has a node
/// _ReflectedWriter.of(Oddity.self)   // nil: a class field (and an enum) have none
/// ```
///
/// A writer exists only for a struct whose stored properties are all of the kinds it
/// writes: `String`, the integers, `Double`, `Float`, `Bool`, `Date`, `UUID`, `URL`,
/// `Decimal`, `[String]`, `[Int]`, `[Double]`, structs made of those, and optionals of
/// any of them (left out when nil, as `encodeIfPresent` does). Whether the type's
/// `encode(to:)` really writes those fields, under those names, in that order, is found
/// the way the field model finds it (see `_FieldModel`): the first records of the type
/// are encoded both ways and the bytes compared, at least ``_FieldModel/minimumChecks``
/// records and past them while some optional has not been seen holding a value, up to
/// ``_FieldModel/maximumChecks``. One difference, or an optional never seen with a value,
/// and the type is encoded through `Codable` for good; so is a type the field model had
/// already moved a field to `Codable` for when a record was checked. A type whose `encode(to:)`
/// writes differently only for values the checked records never held is the limit of this
/// scheme, the same limit the field model documents.
///
/// `@unchecked Sendable`: the node tree is immutable once made; the check state is behind
/// a lock (`_Lock`) and the verdict an `Atomic`.
final class _ReflectedWriter: @unchecked Sendable {
  let root: _WriteNode
  /// How many optionals the node tree holds (at any depth).
  let optionalCount: Int
  /// The node tree as a flat program (see `_WriteOp`): what `write` runs per record.
  let program: [_WriteOp]
  /// The field names the program writes, by `_WriteOp.key`.
  let keyNames: [String]
  /// The optional types the program tests for nil, by `_WriteOp.optional`.
  let optionalTypes: [any _WriterOptional.Type]
  /// How deep the program nests objects.
  let maxDepth: Int
  /// 0 while records are checked, 1 once trusted, 2 once refused.
  private let verdict = Atomic<Int>(0)
  private let checks: _Lock<(checked: Int, seen: [Bool])>

  private init(root: _WriteNode, optionalCount: Int) {
    self.root = root
    self.optionalCount = optionalCount
    var compiler = _WriteCompiler()
    compiler.compile(root, offset: 0, key: -1, depth: 1)
    program = compiler.ops
    keyNames = compiler.keyNames
    optionalTypes = compiler.optionalTypes
    maxDepth = compiler.maxDepth
    checks = _Lock((0, Array(repeating: false, count: optionalCount)))
  }

  /// Writers already made, by type (nil: the type has none).
  private static let _cache = _Lock<[ObjectIdentifier: _ReflectedWriter?]>([:])

  /// The writer of `type`, or nil when reflection cannot write it.
  static func of(_ type: Any.Type) -> _ReflectedWriter? {
    let id = ObjectIdentifier(type)
    if let known = _cache.withLock({ $0[id] }) { return known }
    var optionals = 0
    let made = _WriteNode.record(type, optionals: &optionals).map {
      _ReflectedWriter(root: $0, optionalCount: optionals)
    }
    return _cache.withLock { cache in
      if let known = cache[id] { return known }
      cache[id] = made
      return made
    }
  }

  /// Whether records of the type are written by reflection alone.
  @inline(__always)
  var isTrusted: Bool { verdict.load(ordering: .acquiring) == 1 }

  /// Whether the type is encoded through `Codable` for good.
  var isRefused: Bool { verdict.load(ordering: .acquiring) == 2 }

  /// Checks one record: `codable` holds the bytes its `encode(to:)` wrote (already in
  /// `encoder.out`); the reflected bytes are written after them, compared, and dropped,
  /// with any field name only they defined.
  func check(_ record: UnsafeRawPointer, codable: Range<Int>, encoder: _BinaryEncoder) {
    guard verdict.load(ordering: .acquiring) == 0 else { return }
    let keyMark = encoder.keys.count
    let savedPosition = encoder.keyPosition
    encoder.keyPosition = 0
    let start = encoder.out.count
    defer {
      encoder.out.count = start
      encoder.keys.rollback(to: keyMark)
      encoder.keyPosition = savedPosition
    }
    do { try write(record, encoder: encoder) } catch { return }  // a full key table: try the next record
    let same =
      encoder.out.count - start == codable.count
      && memcmp(encoder.out.base + codable.lowerBound, encoder.out.base + start, codable.count) == 0
    var seenNow = Array(repeating: false, count: optionalCount)
    root.markSeen(record, &seenNow)
    let model = _FieldModel.of(root.type).plan
    let modelAgrees = !model.status.values.contains(.differs) && model.encodedOnly.isEmpty
    checks.withLock { state in
      guard verdict.load(ordering: .relaxed) == 0 else { return }
      guard same && modelAgrees else {
        verdict.store(2, ordering: .releasing)
        return
      }
      state.checked += 1
      for i in seenNow.indices where seenNow[i] { state.seen[i] = true }
      guard state.checked >= _FieldModel.minimumChecks else { return }
      if !state.seen.contains(false) {
        verdict.store(1, ordering: .releasing)
      } else if state.checked >= _FieldModel.maximumChecks {
        verdict.store(2, ordering: .releasing)
      }
    }
  }

  /// Writes the record at `record`.
  func write(_ record: UnsafeRawPointer, encoder e: _BinaryEncoder) throws {
    if e.keyIDsOwner !== self {
      e.keyIDsOwner = self
      e.keyIDs = Array(repeating: UInt32.max, count: keyNames.count)
    }
    try withUnsafeTemporaryAllocation(of: UnsafeRawPointer.self, capacity: maxDepth + 1) { bases in
      try program.withUnsafeBufferPointer { ops in
        try keyNames.withUnsafeBufferPointer { names in
          var depth = 0
          var base = record
          var i = 0
          while i < ops.count {
            let op = ops[i]
            let p = base + op.offset
            if op.optional >= 0 {
              // The commonest optionals are tested as what they are; others through their
              // metatype, which looks up the optional's metadata (about as long as writing a
              // short string).
              let isNil: Bool
              switch op.nilTest {
              case .string: isNil = p.assumingMemoryBound(to: String?.self).pointee == nil
              case .int: isNil = p.assumingMemoryBound(to: Int?.self).pointee == nil
              case .double: isNil = p.assumingMemoryBound(to: Double?.self).pointee == nil
              case .bool: isNil = p.assumingMemoryBound(to: Bool?.self).pointee == nil
              case .date: isNil = p.assumingMemoryBound(to: Date?.self).pointee == nil
              case .strings: isNil = p.assumingMemoryBound(to: [String]?.self).pointee == nil
              default: isNil = optionalTypes[Int(op.optional)]._isNil(p)
              }
              if isNil {
                i += Int(op.skip)  // as encodeIfPresent: no key, no value
                continue
              }
            }
            if op.key >= 0 { try e.writeFieldKey(Int(op.key), names[Int(op.key)]) }
            switch op.kind {
            case .string: e.writeString(p.load(as: String.self))
            case .int: e.writeInt(Int64(p.load(as: Int.self)))
            case .int8: e.writeInt(Int64(p.load(as: Int8.self)))
            case .int16: e.writeInt(Int64(p.load(as: Int16.self)))
            case .int32: e.writeInt(Int64(p.load(as: Int32.self)))
            case .int64: e.writeInt(p.load(as: Int64.self))
            case .uint: e.writeUInt(UInt64(p.load(as: UInt.self)))
            case .uint8: e.writeInt(Int64(p.load(as: UInt8.self)))
            case .uint16: e.writeInt(Int64(p.load(as: UInt16.self)))
            case .uint32: e.writeInt(Int64(p.load(as: UInt32.self)))
            case .uint64: e.writeUInt(p.load(as: UInt64.self))
            case .double: e.writeDouble(p.load(as: Double.self))
            case .float: e.writeDouble(Double(p.load(as: Float.self)))
            case .bool: e.writeBool(p.load(as: Bool.self))
            case .date: e.writeDouble(p.load(as: Date.self).timeIntervalSinceReferenceDate)
            case .uuid: e.writeString(p.load(as: UUID.self).uuidString)
            case .url: e.writeString(p.load(as: URL.self).absoluteString)
            case .decimal: e.writeDecimal(p.load(as: Decimal.self))
            case .strings: e.writeArray(p.load(as: [String].self), e.writeString)
            case .ints: e.writeArray(p.load(as: [Int].self)) { e.writeInt(Int64($0)) }
            case .doubles: e.writeArray(p.load(as: [Double].self), e.writeDouble)
            case .object:
              // A struct's fields follow, at offsets from its address (an optional's payload
              // is at offset 0), then its `.end`.
              e.out.append(_Tag.object)
              bases[depth] = base
              depth += 1
              base = p
            case .end:
              e.out.append(0)
              depth -= 1
              base = bases[depth]
            case .optional:
              assertionFailure("an optional's step tests it and writes its wrapped value")
            }
            i += 1
          }
        }
      }
    }
  }
}

/// One step of a ``_ReflectedWriter``'s program: a trivial value, so that running the
/// program retains nothing.
struct _WriteOp {
  /// What the step writes: a scalar, `.object` to open a struct whose fields follow, or
  /// `.end` to close it.
  var kind: _WriteNode.Kind
  /// Where the value is, from the innermost open struct's address.
  var offset: Int
  /// The field's name in `keyNames`, or -1 (the record itself, an `.end`).
  var key: Int32
  /// The optional to test for nil in `optionalTypes`, or -1.
  var optional: Int32
  /// Steps to move past when the optional is nil: this one, and a struct's fields and end.
  var skip: Int32
  /// How the optional is tested for nil: as `String?`, `Int?`, ... (the kind of its
  /// wrapped value), or through its metatype (any other kind).
  var nilTest: _WriteNode.Kind = .optional
}

/// Flattens a node tree into `_WriteOp`s.
struct _WriteCompiler {
  var ops: [_WriteOp] = []
  var keyNames: [String] = []
  var optionalTypes: [any _WriterOptional.Type] = []
  var maxDepth = 0

  mutating func compile(_ node: _WriteNode, offset: Int, key: Int32, depth: Int) {
    maxDepth = max(maxDepth, depth)
    var target = node
    var optional: Int32 = -1
    if node.kind == .optional, let wrapped = node.wrapped, let type = node.type as? any _WriterOptional.Type {
      optional = Int32(optionalTypes.count)
      optionalTypes.append(type)
      target = wrapped
    }
    let at = ops.count
    var op = _WriteOp(kind: target.kind, offset: offset, key: key, optional: optional, skip: 1)
    if optional >= 0, [.string, .int, .double, .bool, .date, .strings].contains(target.kind) {
      op.nilTest = target.kind
    }
    ops.append(op)
    if target.kind == .object {
      for field in target.fields {
        let k = Int32(keyNames.count)
        keyNames.append(field.name)
        compile(field.node, offset: field.offset, key: k, depth: depth + 1)
      }
      ops.append(_WriteOp(kind: .end, offset: 0, key: -1, optional: -1, skip: 1))
    }
    ops[at].skip = Int32(ops.count - at)
  }
}

/// One value's place in a ``_ReflectedWriter``: how to write the value at an address.
///
/// `@unchecked Sendable`: every property is a `let` set in `init`; the closure captures
/// only metatypes.
final class _WriteNode: @unchecked Sendable {
  enum Kind {
    case string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64
    case double, float, bool, date, uuid, url, decimal
    case strings, ints, doubles
    /// An optional of ``wrapped``; its payload is at offset 0.
    case optional
    /// A struct of ``fields``.
    case object
    /// In a program only: the end of a struct.
    case end
  }

  struct Field {
    let name: String
    let offset: Int
    let node: _WriteNode
  }

  let kind: Kind
  /// The Swift type this node writes.
  let type: Any.Type
  let fields: [Field]
  let wrapped: _WriteNode?
  /// For an optional: whether the optional at an address is nil.
  let isNil: ((UnsafeRawPointer) -> Bool)?
  /// For an optional: its place among the writer's optionals.
  let optionalIndex: Int

  private init(
    _ kind: Kind, _ type: Any.Type, fields: [Field] = [], wrapped: _WriteNode? = nil,
    isNil: ((UnsafeRawPointer) -> Bool)? = nil, optionalIndex: Int = -1
  ) {
    self.kind = kind
    self.type = type
    self.fields = fields
    self.wrapped = wrapped
    self.isNil = isNil
    self.optionalIndex = optionalIndex
  }

  // MARK: Building

  /// The node of a record type: a struct whose stored properties all have nodes.
  static func record(_ type: Any.Type, optionals: inout Int) -> _WriteNode? {
    guard let node = make(type, depth: 0, optionals: &optionals), node.kind == .object else { return nil }
    return node
  }

  static func make(_ type: Any.Type, depth: Int, optionals: inout Int) -> _WriteNode? {
    guard depth < 8 else { return nil }
    if let kind = scalarKind(type) { return _WriteNode(kind, type) }
    if let optional = type as? any _WriterOptional.Type {
      return optional._writerNode(depth: depth, optionals: &optionals)
    }
    return structNode(type, depth: depth, optionals: &optionals)
  }

  private static func scalarKind(_ type: Any.Type) -> Kind? {
    switch type {
    case is String.Type: return .string
    case is Int.Type: return .int
    case is Int8.Type: return .int8
    case is Int16.Type: return .int16
    case is Int32.Type: return .int32
    case is Int64.Type: return .int64
    case is UInt.Type: return .uint
    case is UInt8.Type: return .uint8
    case is UInt16.Type: return .uint16
    case is UInt32.Type: return .uint32
    case is UInt64.Type: return .uint64
    case is Double.Type: return .double
    case is Float.Type: return .float
    case is Bool.Type: return .bool
    case is Date.Type: return .date
    case is UUID.Type: return .uuid
    case is URL.Type: return .url
    case is Decimal.Type: return .decimal
    case is [String].Type: return .strings
    case is [Int].Type: return .ints
    case is [Double].Type: return .doubles
    default: return nil
    }
  }

  static func optionalNode(
    _ type: Any.Type, wrapped: _WriteNode, optionals: inout Int, isNil: @escaping (UnsafeRawPointer) -> Bool
  )
    -> _WriteNode
  {
    defer { optionals += 1 }
    return _WriteNode(.optional, type, wrapped: wrapped, isNil: isNil, optionalIndex: optionals)
  }

  private static func structNode(_ type: Any.Type, depth: Int, optionals: inout Int) -> _WriteNode? {
    func open<T>(_: T.Type) -> _WriteNode? {
      // Enums, classes and types that do not encode have no node; neither do types a
      // RawRepresentable or collection conformance encodes in a way of their own.
      guard !(T.self is AnyClass), T.self is any Encodable.Type, !(T.self is any RawRepresentable.Type),
        !(T.self is any Collection.Type)
      else { return nil }
      var fields: [Field] = []
      var readable = true
      let isStruct = _forEachFieldWithKeyPath(of: T.self, options: _EachFieldOptions()) { name, keyPath in
        guard let offset = MemoryLayout<T>.offset(of: keyPath),
          let node = make(Swift.type(of: keyPath).valueType, depth: depth + 1, optionals: &optionals)
        else {
          readable = false
          return false
        }
        fields.append(Field(name: String(cString: name), offset: offset, node: node))
        return true
      }
      guard isStruct, readable, !fields.isEmpty else { return nil }
      return _WriteNode(.object, T.self, fields: fields)
    }
    return _openExistential(type, do: open)
  }

  /// Marks in `seen` the optionals at or below this node that hold a value in the value
  /// at `p`.
  func markSeen(_ p: UnsafeRawPointer, _ seen: inout [Bool]) {
    switch kind {
    case .optional:
      guard !isNil!(p) else { return }
      seen[optionalIndex] = true
      wrapped!.markSeen(p, &seen)
    case .object:
      for field in fields { field.node.markSeen(p + field.offset, &seen) }
    default:
      break
    }
  }
}

/// Optionals open their wrapped type for `_WriteNode`.
protocol _WriterOptional {
  static func _writerNode(depth: Int, optionals: inout Int) -> _WriteNode?
  /// Whether the optional at `p` is nil; called through the metatype, so the optional's
  /// metadata comes with the call instead of from a lookup.
  static func _isNil(_ p: UnsafeRawPointer) -> Bool
}

extension Optional: _WriterOptional {
  static func _isNil(_ p: UnsafeRawPointer) -> Bool {
    // Through `Self` and a borrow: no lookup of `Wrapped?`'s metadata, no copy.
    p.assumingMemoryBound(to: Self.self).pointee == nil
  }

  static func _writerNode(depth: Int, optionals: inout Int) -> _WriteNode? {
    // An optional of an optional encodes its inner nil in a way of its own.
    guard !(Wrapped.self is any _WriterOptional.Type),
      let wrapped = _WriteNode.make(Wrapped.self, depth: depth + 1, optionals: &optionals)
    else { return nil }
    // A single-payload enum keeps its payload at offset 0; only the tag needs reading.
    return _WriteNode.optionalNode(Self.self, wrapped: wrapped, optionals: &optionals) { p in
      if case .none = p.assumingMemoryBound(to: Wrapped?.self).pointee { return true }
      return false
    }
  }
}
