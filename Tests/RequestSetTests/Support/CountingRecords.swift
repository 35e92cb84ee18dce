import Synchronization
@testable import RequestSet

/// An external record source that counts every record it hands out, to pin down how
/// many records an evaluation reads.
final class CountingRecords: _ExternalRecords, Sendable {
  let records: [Animal]
  let table: _FieldTable
  let reads = Atomic<Int>(0)

  init(_ records: [Animal]) {
    self.records = records
    var table = _FieldTable(probedKinds: [:])
    for r in records { table.append(try! FieldValue(encoding: r)) }
    if let first = records.first { table.addProbed(_SchemaProbe.learn(Animal.self, from: try! FieldValue(encoding: first))) }
    self.table = table
  }

  func record(at slot: Int) throws -> Animal {
    reads.add(1, ordering: .relaxed)
    return records[slot]
  }

  func fields() throws -> any _FieldAccess { table }

  func snapshot() -> StoreSnapshot<Animal> {
    StoreSnapshot(storage: .external(self), slotCount: records.count, live: nil, liveCount: records.count, version: 0)
  }
}
