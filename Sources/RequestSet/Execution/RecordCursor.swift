/// Hands the tests of one evaluation a pointer to a slot's record.
///
/// In memory the pointer points into the store's array, so typed tests read fields in
/// place. For an external store the cursor decodes a slot's record into a one-record
/// buffer the first time a test needs it, and keeps it while further tests look at the
/// same slot: an AND of three typed conditions decodes each record once, and a filter on
/// string keys alone decodes nothing.
final class _RecordCursor<Element: Sendable> {
  /// The records' storage, when they are in memory.
  let base: UnsafePointer<Element>?
  let snapshot: StoreSnapshot<Element>
  private var buffer: UnsafeMutablePointer<Element>?
  private var loadedSlot = -1

  init(base: UnsafePointer<Element>?, snapshot: StoreSnapshot<Element>) {
    self.base = base
    self.snapshot = snapshot
  }

  /// Runs `body` with a cursor over the snapshot's records.
  static func with<R>(_ snapshot: StoreSnapshot<Element>, _ body: (_RecordCursor) throws -> R) throws -> R {
    switch snapshot._storage {
    case .contiguous(let records, _):
      return try records.withUnsafeBufferPointer { buffer in
        try body(_RecordCursor(base: buffer.baseAddress, snapshot: snapshot))
      }
    case .external:
      return try body(_RecordCursor(base: nil, snapshot: snapshot))
    }
  }

  /// The record in `slot`, valid until the cursor moves to another slot.
  @inline(__always)
  func pointer(_ slot: Int) throws -> UnsafePointer<Element> {
    if let base { return base + slot }
    return try _load(slot)
  }

  private func _load(_ slot: Int) throws -> UnsafePointer<Element> {
    if slot == loadedSlot, let buffer { return UnsafePointer(buffer) }
    let record = try snapshot._record(at: slot)
    if let buffer {
      if loadedSlot >= 0 { buffer.deinitialize(count: 1) }
      buffer.initialize(to: record)
    } else {
      let b = UnsafeMutablePointer<Element>.allocate(capacity: 1)
      b.initialize(to: record)
      buffer = b
    }
    loadedSlot = slot
    return UnsafePointer(buffer!)
  }

  deinit {
    guard let buffer else { return }
    if loadedSlot >= 0 { buffer.deinitialize(count: 1) }
    buffer.deallocate()
  }
}
