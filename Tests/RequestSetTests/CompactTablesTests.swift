import Foundation
import Testing

@testable import RequestSet

/// What a store keeps per record, packed: a log's record location and an index entry
/// are per-record costs (see docs/BENCHMARKS.md, the 10M scale row), so their sizes are
/// pinned here, with the values at the edges of each packing.
@Suite(.ownThreads) struct CompactTablesTests {
  @Test func aRecordLocationTakesTwelveBytes() {
    #expect(MemoryLayout<_RecordLocation>.stride == 12)
  }

  @Test(arguments: [32, 1 << 32 - 1, 1 << 32, 1 << 40 + 12_345, 1 << 48 - 1])
  func aRecordLocationKeepsWideOffsets(offset: Int) {
    let l = _RecordLocation(
      offset: offset, length: 1 << 24, frameLength: 1 << 24 + UInt32(_LogFormat.maxFrameHeader))
    #expect(l.offset == offset)
    #expect(l.length == 1 << 24)
    #expect(l.frameLength == 1 << 24 + UInt32(_LogFormat.maxFrameHeader))
  }

  @Test func anIndexEntryTakesTwentyFourBytes() {
    #expect(MemoryLayout<_IndexEntry>.stride == 24)
  }

  @Test(arguments: [0, 1 << 32 - 1, 1 << 32, 1 << 40 - 1])
  func anIndexEntryKeepsWideSlots(slot: Int) {
    var e = _IndexEntry(value: .string("Cow"), slot: slot)
    #expect(e.slot == slot)
    #expect(e.value == .string("Cow"))
    e.slot = slot / 2
    #expect(e.slot == slot / 2)
  }

  /// Every kind of value comes back as it went in, the boxed ones (a Decimal, arrays,
  /// objects) too, and the index orders them as the filters do.
  @Test func anIndexEntryKeepsEveryKindOfValue() {
    let values: [FieldValue] = [
      .null, .bool(true), .int(-3), .uint(UInt64.max), .double(2.5), .decimal(Decimal(string: "2.75")!),
      .string("a long string past fifteen bytes"), .array([.int(1)]), .object(["a": .int(1)]),
    ]
    for v in values { #expect(_IndexEntry(value: v, slot: 7).value == v) }
    let ordered = values.filter(_IndexOrder.isOrdered)
    let index = _SortedIndex(
      entries: ordered.reversed().enumerated().map { _IndexEntry(value: $1, slot: $0) })
    var seen: [FieldValue] = []
    index.forEach(from: index.startPosition, to: index.endPosition) {
      seen.append($0.value)
      return true
    }
    #expect(
      seen == [
        .null, .bool(true), .int(-3), .double(2.5), .decimal(Decimal(string: "2.75")!), .uint(UInt64.max),
        .string("a long string past fifteen bytes"),
      ])
    #expect(index.unordered.isEmpty)
  }
}
