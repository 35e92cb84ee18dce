import Foundation
import Testing

@testable import RequestSet

/// Damage every byte of a small log (and random bits of a larger one): the damage must be
/// detected and handled as the recovery mode says, never trap or hang.
@Suite(.ownThreads) struct LogCorruptionTests {
  /// Every byte of a log of 20 scripted writes (40 with `REQUESTSET_SOAK=1`), in every
  /// recovery mode.
  @Test func everyByteFlipIsHandledAsTheModeSays() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: TestScale.pick(quick: 20, soak: 40), seed: 0xF11B)
    #expect(script.hasEveryKindOfWrite)
    let path = dir.file("flip.rslog")
    let lastFrame = script.frameStarts[script.frameStarts.count - 2]
    let n = script.writes.count
    var rng = SeededRandom(seed: 0xB17E)
    let allVersions = Set(script.states.joined())
    for p in 0..<script.bytes.count {
      var damaged = script.bytes
      damaged[p] ^= UInt8(truncatingIfNeeded: rng.next() % 255 + 1)

      if p < _LogFormat.headerSize {
        for mode in [LogRecoveryMode.truncateTornTail, .failOnAnyDamage, .stopAtFirstDamage, .skipDamagedFrames] {
          try writeFile(damaged, to: path)
          let error = #expect(throws: RequestSetError.self, "byte \(p), \(mode)") { try readLog(path, .init(recovery: mode)) }
          #expect(error?.code == .corruptLog)
        }
        continue
      }
      let frame = script.frameStart(containing: p)
      let write = script.write(containing: p)

      // Default: damage in the last frame looks like an interrupted write; anywhere else
      // it fails the open, naming the damaged frame's offset.
      try writeFile(damaged, to: path)
      if frame == lastFrame {
        let (records, report) = try readLog(path)
        #expect(records == script.states[n - 1], "byte \(p)")
        #expect(report.tornTail?.offset == script.ends[n - 1], "byte \(p)")
      } else {
        let error = #expect(throws: RequestSetError.self, "byte \(p)") { try readLog(path) }
        #expect(error?.code == .corruptLog)
        #expect(error?.message.contains("is damaged at offset \(frame) (") == true, "byte \(p): \(error?.message ?? "")")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(damaged), "a refused open changes nothing")
      }

      // Absolute consistency: any damage fails.
      try writeFile(damaged, to: path)
      #expect(throws: RequestSetError.self, "byte \(p)") { try readLog(path, .init(recovery: .failOnAnyDamage)) }

      // Point in time: everything before the damaged frame's write, nothing after.
      try writeFile(damaged, to: path)
      let (prefix, prefixReport) = try readLog(path, .init(recovery: .stopAtFirstDamage))
      #expect(prefix == script.states[script.completeWrites(upTo: frame)], "byte \(p)")
      #expect(!prefixReport.isClean)
      #expect(try readLog(path).0 == prefix, "byte \(p): the damage was cut off")

      // Salvage: every write but the damaged one (a damaged key frame also loses the
      // records that use its names, so then only real versions must come back).
      try writeFile(damaged, to: path)
      let (salvaged, salvageReport) = try readLog(path, .init(recovery: .skipDamagedFrames))
      #expect(!salvageReport.isClean)
      if script.bytes[frame + 4] == _LogFormat.FrameType.keys.rawValue {
        #expect(salvaged.allSatisfy(allVersions.contains), "byte \(p)")
      } else {
        #expect(salvaged == (try script.state(skipping: write)), "byte \(p)")
      }
      let (reread, rereadReport) = try readLog(path)
      #expect(reread == salvaged, "byte \(p): the salvaged log was rewritten")
      #expect(rereadReport.isClean, "byte \(p)")
      // The salvage kept the damaged bytes beside the log (`flip.rslog.damaged-0-<crc>`, one
      // per flipped byte): thousands of them made each later open list a directory of
      // thousands (the soak case took 439 s).
      try dir.removeFiles(startingWith: "flip.rslog.damaged-")
    }
  }

  @Test func randomBitFlipsInALargerLog() throws {
    let seed = testSeed("randomBitFlipsInALargerLog")
    var rng = SeededRandom(seed: seed)
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: TestScale.pick(quick: 300, soak: 1_500), seed: seed)
    let path = dir.file("flip.rslog")
    let lastFrame = script.frameStarts[script.frameStarts.count - 2]
    for _ in 0..<TestScale.pick(quick: 20, soak: 60) {
      var damaged = script.bytes
      let p = _LogFormat.headerSize + Int(rng.next() % UInt64(damaged.count - _LogFormat.headerSize))
      damaged[p] ^= 1 << UInt8(rng.next() % 8)
      let frame = script.frameStart(containing: p)
      try writeFile(damaged, to: path)
      if frame == lastFrame {
        #expect(try readLog(path).1.tornTail != nil, "seed \(seed), byte \(p)")
      } else {
        let error = #expect(throws: RequestSetError.self, "seed \(seed), byte \(p)") { try readLog(path) }
        #expect(error?.message.contains("is damaged at offset \(frame) (") == true, "seed \(seed), byte \(p)")
      }
      try writeFile(damaged, to: path)
      let (salvaged, _) = try readLog(path, .init(recovery: .skipDamagedFrames))
      if script.bytes[frame + 4] != _LogFormat.FrameType.keys.rawValue {
        #expect(salvaged == (try script.state(skipping: script.write(containing: p))), "seed \(seed), byte \(p)")
      }
    }
  }

  /// A frame copied from another log (another salt) never verifies here.
  @Test func framesFromAnotherLogDoNotVerify() throws {
    let dir = try LogTempDir()
    let a = try ScriptedLog.make(in: dir, count: 5, seed: 1)
    let other = try LogTempDir()
    let b = try ScriptedLog.make(in: other, count: 5, seed: 1)
    // Same writes, different salts: splice b's last write onto a.
    let spliced = Array(a.bytes) + Array(b.bytes[b.ends[4]...])
    let path = dir.file("spliced.rslog")
    try writeFile(spliced, to: path)
    let (records, report) = try readLog(path)
    #expect(records == a.states[5])
    #expect(report.tornTail == .init(offset: a.bytes.count, byteCount: b.bytes.count - b.ends[4]))
  }
}
