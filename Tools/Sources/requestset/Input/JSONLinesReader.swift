import Foundation
import RequestSet

/// JSON Lines, read as a stream: one JSON object per line; blank lines are skipped.
///
/// Objects are parsed by ``JSONReader``, so numbers keep the kind they are written in
/// and ``keyOrder`` holds the keys in the order the lines first give them.
struct JSONLinesReader {
  /// Top-level string values equal to this are absent (`--null`).
  let nullText: String?
  /// The keys in the order the input first gives them (nested keys as dotted paths).
  private(set) var keyOrder = KeyOrderBuilder()
  private var parser = JSONReader(trackKeys: true, separatesID: true)
  private var carry: [UInt8] = []
  private var line = 0
  private var lastTopLevelKeys: [String] = []
  /// Nested key order is recorded from this many first records; later records add only
  /// top-level keys not seen before.
  static let trackedRecords = 1_000

  init(nullText: String?) { self.nullText = nullText }

  /// Feeds the next bytes of the file; `body` gets each complete record, or each bad line.
  mutating func feed(
    _ chunk: UnsafeRawBufferPointer, _ body: (Result<InputRecord, InputProblem>) throws -> Void
  ) rethrows {
    var start = 0
    let n = chunk.count
    guard let base = chunk.baseAddress else { return }
    while start < n {
      guard let newline = memchrByte(base + start, n - start) else { break }
      let end = newline - base
      if carry.isEmpty {
        try handle(UnsafeRawBufferPointer(rebasing: chunk[start..<end]), body)
      } else {
        carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start..<end]))
        let whole = carry
        carry.removeAll(keepingCapacity: true)
        try whole.withUnsafeBytes { try handle($0, body) }
      }
      start = end + 1
    }
    if start < n { carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start..<n])) }
  }

  /// Ends the input: the last line, when it has no line break.
  mutating func finish(_ body: (Result<InputRecord, InputProblem>) throws -> Void) rethrows {
    guard !carry.isEmpty else { return }
    let whole = carry
    carry.removeAll()
    try whole.withUnsafeBytes { try handle($0, body) }
  }

  private mutating func handle(
    _ bytes: UnsafeRawBufferPointer, _ body: (Result<InputRecord, InputProblem>) throws -> Void
  )
    rethrows
  {
    line += 1
    var bytes = bytes
    if bytes.last == 0x0D { bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast()) }
    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
    let value: FieldValue
    do {
      value = try parser.parse(bytes)
    } catch {
      return try body(
        .failure(
          InputProblem(
            line: line, reason: "it is not valid JSON: \(error.reason) (at byte \(error.offset + 1))")))
    }
    guard case .object(var fields) = value else {
      return try body(.failure(InputProblem(line: line, reason: "it holds \(value), not a JSON object")))
    }
    if parser.trackKeys {
      keyOrder.add(parser.keyOrder)
      if line >= Self.trackedRecords { parser.trackKeys = false }
    } else if parser.topLevelKeys != lastTopLevelKeys {
      keyOrder.add(parser.topLevelKeys.map { FieldValue.key(forFieldNames: [$0]) })
      lastTopLevelKeys = parser.topLevelKeys
    }
    if let nullText {
      for (key, v) in fields where v == .string(nullText) { fields[key] = nil }
    }
    try body(.success(InputRecord(line: line, id: parser.topLevelID, fields: fields)))
  }
}

/// The address of the first line feed in `count` bytes from `start`, or nil.
private func memchrByte(_ start: UnsafeRawPointer, _ count: Int) -> UnsafeRawPointer? {
  guard let p = memchr(start, 0x0A, count) else { return nil }
  return UnsafeRawPointer(p)
}
