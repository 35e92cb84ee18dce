import Foundation
import Testing

@testable import RequestSet

/// Cut a log at every byte offset: each reopen must give exactly the writes that were
/// complete before the cut, and report the cut-off bytes.
@Suite(.ownThreads) struct LogTruncationTests {
  /// Every offset of a log of 48 scripted writes (120 with `REQUESTSET_SOAK=1`): each
  /// frame kind, a batch, a save and a delete are cut at every byte either way. The offsets
  /// are dealt to four cases (`size % 4 == slice`) that run side by side: as one case, the
  /// soak's cuts ran alone for minutes at the end of `swift test`.
  @Test(arguments: 0..<4)
  func everyTruncationReopensToTheLongestCompletePrefix(slice: Int) throws {
    let dir = try LogTempDir()
    let count = TestScale.pick(quick: 48, soak: 120)
    let script = try ScriptedLog.make(in: dir, count: count, seed: 0x7A11)
    #expect(script.states.last!.count > count / 3)
    #expect(script.hasEveryKindOfWrite)
    let path = dir.file("cut.rslog")
    for size in 0...script.bytes.count where size % 4 == slice {
      try writeFile(script.bytes[..<size], to: path)
      if size == 0 {
        // An empty file is a new, empty log.
        #expect(try readLog(path).0 == [])
        continue
      }
      if size < _LogFormat.headerSize {
        let error = #expect(throws: RequestSetError.self, "size \(size)") { try readLog(path) }
        #expect(error?.code == .corruptLog)
        continue
      }
      let complete = script.completeWrites(upTo: size)
      let (records, report) = try readLog(path)
      #expect(records == script.states[complete], "cut at \(size)")
      let boundary = script.ends[complete]
      if boundary == size {
        #expect(report.isClean, "cut at \(size)")
      } else {
        #expect(report.tornTail == .init(offset: boundary, byteCount: size - boundary), "cut at \(size)")
      }
      // The tail was cut off the file: opening again is clean and the same.
      let (again, secondReport) = try readLog(path)
      #expect(again == records)
      #expect(secondReport.isClean)
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == boundary)
    }
  }

  @Test func strictModeRefusesATornTailAndChangesNothing() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: 10, seed: 3)
    let path = dir.file("cut.rslog")
    let size = script.bytes.count - 3
    try writeFile(script.bytes[..<size], to: path)
    let error = #expect(throws: RequestSetError.self) { try readLog(path, .init(recovery: .failOnAnyDamage)) }
    #expect(error?.code == .corruptLog)
    #expect(error?.message.contains("ends in an incomplete write at offset \(script.ends[9])") == true)
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == size)
  }

  @Test func readOnlyOpenIgnoresATornTailWithoutCuttingIt() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: 10, seed: 4)
    let path = dir.file("cut.rslog")
    let size = script.bytes.count - 2
    try writeFile(script.bytes[..<size], to: path)
    let (records, report) = try readLog(path, .init(readOnly: true))
    #expect(records == script.states[9])
    #expect(report.tornTail?.offset == script.ends[9])
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == size)
  }
}
