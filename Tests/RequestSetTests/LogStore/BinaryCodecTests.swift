import Foundation
import Testing

@testable import RequestSet

@Suite(.ownThreads) struct BinaryCodecTests {
  @Test func randomRecordsRoundTrip() throws {
    let seed = testSeed("randomRecordsRoundTrip")
    var rng = SeededRandom(seed: seed)
    var keys = _KeyTable()
    for i in 0..<2_000 {
      let record = Critter.random(id: i, using: &rng)
      let out = _ByteBuffer()
      try _BinaryEncoder.encode(record, into: out, keys: &keys)
      let back = try _BinaryDecoder.decode(Critter.self, from: out.bytes, names: keys.names)
      #expect(back == record, "seed \(seed), record \(i)")
    }
  }

  /// The schema-less reader must give exactly the `FieldValue`s the in-memory store gets
  /// from `_FieldEncoder`, whole and key by key.
  @Test func fieldValuesMatchTheFieldEncoder() throws {
    let seed = testSeed("fieldValuesMatchTheFieldEncoder")
    var rng = SeededRandom(seed: seed)
    var keys = _KeyTable()
    for i in 0..<1_000 {
      let record = Critter.random(id: i, using: &rng)
      let out = _ByteBuffer()
      try _BinaryEncoder.encode(record, into: out, keys: &keys)
      let expected = try _FieldEncoder.encode(record)
      var r = _ByteReader(out.bytes)
      let read = try _BinaryValue.read(&r, names: keys.names)
      #expect(read == expected, "seed \(seed), record \(i)")
      #expect(r.isAtEnd)

      var flat: [String: FieldValue] = [:]
      flatten(expected, into: &flat)
      for (key, value) in flat {
        let path = key.split(separator: ".").map { Int(keys.ids[String($0)]!) }
        var seeker = _ByteReader(out.bytes)
        #expect(try _BinaryValue.seek(&seeker, path: path), "seed \(seed), key \(key)")
        #expect(try _BinaryValue.read(&seeker, names: keys.names) == value, "seed \(seed), key \(key)")
      }
    }
  }

  @Test func knownBytes() throws {
    struct Small: Codable { var id: Int; var name: String; var ok: Bool; var n: Int? }
    let (bytes, names) = try encodeAlone(Small(id: 3, name: "Rex", ok: true, n: -200))
    #expect(names == ["id", "name", "ok", "n"])
    // object, key 0 = small 3, key 1 = "Rex", key 2 = true, key 3 = zigzag(-200) = 399, end
    #expect(bytes == [0x08, 0x01, 0x83, 0x02, 0x06, 3, 0x52, 0x65, 0x78, 0x03, 0x02, 0x04, 0x03, 0x8F, 0x03, 0x00])
  }

  @Test func typeThatGainsAnOptionalAndLosesAFieldReadsOldRecords() throws {
    struct V1: Codable { var id: Int; var name: String; var age: Int }
    struct V2: Codable, Equatable { var id: Int; var name: String; var nickname: String? }
    let (bytes, names) = try encodeAlone(V1(id: 7, name: "Daisy", age: 4))
    let v2 = try bytes.withUnsafeBytes { try _BinaryDecoder.decode(V2.self, from: $0, names: names) }
    #expect(v2 == V2(id: 7, name: "Daisy", nickname: nil))
  }

  @Test func fieldsDecodeInAnyOrder() throws {
    struct Forward: Codable { var a: Int; var b: String; var c: [Int] }
    struct Backward: Codable, Equatable {
      var a: Int; var b: String; var c: [Int]
      enum CodingKeys: String, CodingKey { case c, b, a }
      init(a: Int, b: String, c: [Int]) { (self.a, self.b, self.c) = (a, b, c) }
      init(from decoder: any Decoder) throws {
        let k = try decoder.container(keyedBy: CodingKeys.self)
        c = try k.decode([Int].self, forKey: .c)
        a = try k.decode(Int.self, forKey: .a)
        b = try k.decode(String.self, forKey: .b)
      }
    }
    let (bytes, names) = try encodeAlone(Forward(a: 1, b: "x", c: [1, 2]))
    let back = try bytes.withUnsafeBytes { try _BinaryDecoder.decode(Backward.self, from: $0, names: names) }
    #expect(back == Backward(a: 1, b: "x", c: [1, 2]))
  }

  /// An `encode(to:)` that goes back to a container after opening a nested one cannot be
  /// written in one pass; the encoder falls back and still writes the same fields.
  @Test func interleavedContainersFallBackToTheSameFields() throws {
    struct Odd: Encodable {
      enum K: String, CodingKey { case inner, after, x }
      func encode(to encoder: any Encoder) throws {
        var top = encoder.container(keyedBy: K.self)
        var inner = top.nestedContainer(keyedBy: K.self, forKey: .inner)
        try top.encode(1, forKey: .after)
        try inner.encode(2, forKey: .x)  // back into a closed container
      }
    }
    let (bytes, names) = try encodeAlone(Odd())
    let read = try bytes.withUnsafeBytes { buffer -> FieldValue in
      var reader = _ByteReader(buffer)
      return try _BinaryValue.read(&reader, names: names)
    }
    #expect(read == .object(["inner": .object(["x": .int(2)]), "after": .int(1)]))
  }

  @Test func encodingErrorsLeaveTheKeyTableUntouched() throws {
    struct Failing: Encodable {
      struct Boom: Error {}
      enum K: CodingKey { case fresh }
      func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: K.self)
        try c.encode(1, forKey: .fresh)
        throw Boom()
      }
    }
    var keys = _KeyTable()
    let out = _ByteBuffer()
    try _BinaryEncoder.encode(["kept": 1], into: out, keys: &keys)
    let written = out.count
    #expect(throws: RequestSetError.self) { try _BinaryEncoder.encode(Failing(), into: out, keys: &keys) }
    #expect(keys.names == ["kept"])
    #expect(out.count == written)
  }

  @Test func encodingIsAtMostSixTenthsOfJSON() throws {
    var rng = SeededRandom(seed: 42)
    var keys = _KeyTable()
    var binary = 0
    var json = 0
    let encoder = JSONEncoder()
    for i in 0..<1_000 {
      let record = Beast(
        id: i, name: ["Micky", "Rex", "Daisy"][i % 3], species: ["Mouse", "Dog", "Cow"][Int(rng.next() % 3)],
        age: Int(rng.next() % 20), owner: i % 2 == 0 ? .init(city: "Oslo") : nil)
      let out = _ByteBuffer()
      try _BinaryEncoder.encode(record, into: out, keys: &keys)
      binary += out.count
      json += try encoder.encode(record).count
    }
    // The key table is written once per file; count it too.
    binary += keys.names.reduce(0) { $0 + ($1?.utf8.count ?? 0) + 2 }
    #expect(Double(binary) <= 0.6 * Double(json), "binary \(binary) bytes, JSON \(json) bytes")
  }

  // MARK: Damaged bytes

  @Test func everyTruncationThrows() throws {
    var rng = SeededRandom(seed: 7)
    let record = Critter.random(id: 1, using: &rng)
    let (bytes, names) = try encodeAlone(record)
    for n in 0..<bytes.count {
      let prefix = Array(bytes[..<n])
      #expect(throws: (any Error).self, "prefix \(n)") {
        try prefix.withUnsafeBytes { _ = try _BinaryDecoder.decode(Critter.self, from: $0, names: names) }
      }
      #expect(throws: _CodecError.self, "prefix \(n)") {
        try prefix.withUnsafeBytes { buffer in
          var r = _ByteReader(buffer)
          _ = try _BinaryValue.read(&r, names: names)
        }
      }
    }
  }

  @Test func randomDamageNeverTraps() throws {
    let seed = testSeed("randomDamageNeverTraps")
    var rng = SeededRandom(seed: seed)
    let record = Critter.random(id: 1, using: &rng)
    let (bytes, names) = try encodeAlone(record)
    for _ in 0..<20_000 {
      var damaged = bytes
      for _ in 0..<(1 + Int(rng.next() % 3)) {
        damaged[Int(rng.next() % UInt64(damaged.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
      }
      damaged.withUnsafeBytes { buffer in
        _ = try? _BinaryDecoder.decode(Critter.self, from: buffer, names: names)
        var r = _ByteReader(buffer)
        _ = try? _BinaryValue.read(&r, names: names)
        var k = _KindAccumulator()
        var r2 = _ByteReader(buffer)
        _ = try? _BinaryValue.collectKinds(&r2, names: names, into: &k)
      }
    }
    // Pure noise, too.
    for _ in 0..<5_000 {
      let noise = (0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      noise.withUnsafeBytes { buffer in
        _ = try? _BinaryDecoder.decode(Critter.self, from: buffer, names: names)
        var r = _ByteReader(buffer)
        _ = try? _BinaryValue.read(&r, names: names)
      }
    }
  }

  @Test func deepNestingIsRefusedNotFollowed() throws {
    let deep = [UInt8](repeating: _Tag.array, count: 100_000)
    deep.withUnsafeBytes { buffer in
      var r = _ByteReader(buffer)
      #expect(throws: _CodecError.self) { try _BinaryValue.skip(&r) }
      var r2 = _ByteReader(buffer)
      #expect(throws: _CodecError.self) { _ = try _BinaryValue.read(&r2, names: []) }
      #expect(throws: DecodingError.self) { _ = try _BinaryDecoder.decode([[Int]].self, from: buffer, names: []) }
    }
    // A string claiming more bytes than exist allocates nothing and throws.
    let huge: [UInt8] = [_Tag.string, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x41]
    huge.withUnsafeBytes { buffer in
      var r = _ByteReader(buffer)
      #expect(throws: _CodecError.self) { _ = try _BinaryValue.read(&r, names: []) }
    }
  }

  @Test func mismatchedTypesThrowDecodingErrors() throws {
    struct A: Codable { var id: String }
    struct B: Codable { var id: Int }
    let (bytes, names) = try encodeAlone(A(id: "x"))
    #expect(throws: DecodingError.self) {
      try bytes.withUnsafeBytes { _ = try _BinaryDecoder.decode(B.self, from: $0, names: names) }
    }
    let (small, n2) = try encodeAlone(B(id: 300))
    struct C: Codable { var id: Int8 }
    #expect(throws: DecodingError.self) {
      try small.withUnsafeBytes { _ = try _BinaryDecoder.decode(C.self, from: $0, names: n2) }
    }
  }
}

@Suite(.ownThreads) struct ChecksumAndVarintTests {
  @Test func crc32cKnownVectors() {
    #expect(_CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    #expect(_CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    #expect(_CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    #expect(_CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
  }

  @Test func crcUpdatesCompose() {
    let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    let whole = _CRC32C.checksum(data)
    for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
      let a = data.withUnsafeBytes { _CRC32C.update(_CRC32C.initial, UnsafeRawBufferPointer(rebasing: $0[..<split])) }
      let b = data.withUnsafeBytes { _CRC32C.update(a, UnsafeRawBufferPointer(rebasing: $0[split...])) }
      #expect(_CRC32C.finish(b) == whole)
    }
  }

  /// The CPU's instruction and the software tables agree on every length from 0 to 300 at
  /// every alignment from 0 to 7, from several running states; on a CPU without the
  /// instruction both sides are the software path and the test still checks the vectors.
  @Test func hardwareAndSoftwareAgree() {
    var rng = SeededRandom(seed: 0xC4C3_2C)
    let data = (0..<320).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    data.withUnsafeBytes { all in
      for offset in 0..<8 {
        for length in 0...300 {
          let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
          for state in [_CRC32C.initial, 0, 0x1234_5678] {
            #expect(_CRC32C.update(state, slice) == _CRC32C.softwareUpdate(state, slice))
          }
        }
      }
    }
    let vector = Array("123456789".utf8)
    #expect(vector.withUnsafeBytes { _CRC32C.finish(_CRC32C.softwareUpdate(_CRC32C.initial, $0)) } == 0xE306_9283)
  }

  /// The three-lane checksum a log checkpoint keeps: the interleaved instruction path and
  /// the software tables agree at every length and alignment (lanes of 0 bytes, tails of
  /// 0 to 23 bytes), it is the documented combination of three plain CRC-32Cs, and a
  /// change of any one byte changes it.
  /// The checkpoint's checksum read a window at a time (so a log need not be resident to
  /// be checksummed) is the checksum of the bytes in memory, for windows smaller and
  /// larger than a lane, and nil when a read fails.
  @Test func laneChecksumsReadAWindowAtATimeAgreeWithTheChecksumInMemory() {
    var rng = SeededRandom(seed: 0x5EED)
    let data = (0..<400).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    data.withUnsafeBytes { all in
      for window in [8, 16, 24, 64, 1024] {
        for length in 0...400 {
          let streamed = _CRC32C.laneChecksum(count: length, window: window) { buffer, offset in
            guard offset >= 0, offset + buffer.count <= length else { return false }
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[offset..<(offset + buffer.count)]))
            return true
          }
          #expect(streamed == _CRC32C.laneChecksum(UnsafeRawBufferPointer(rebasing: all[0..<length])), "\(length)")
        }
      }
    }
    #expect(_CRC32C.laneChecksum(count: 100, window: 8) { _, _ in false } == nil)
  }

  @Test func laneChecksumsAgreeAndSeeEveryByte() {
    var rng = SeededRandom(seed: 0x1A4E)
    let data = (0..<420).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    func rotl(_ v: UInt32, _ n: UInt32) -> UInt32 { (v << n) | (v >> (32 - n)) }
    data.withUnsafeBytes { all in
      for offset in 0..<8 {
        for length in 0...400 {
          let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
          let fast = _CRC32C.laneChecksum(slice)
          #expect(fast == _CRC32C.laneChecksum(slice, software: true))
          let lane = length / 3 & ~7
          let parts = [0..<lane, lane..<2 * lane, 2 * lane..<length].map {
            _CRC32C.checksum(UnsafeRawBufferPointer(rebasing: slice[$0]))
          }
          #expect(fast == parts[0] ^ rotl(parts[1], 11) ^ rotl(parts[2], 22))
        }
      }
    }
    var copy = data
    let base = data.withUnsafeBytes { _CRC32C.laneChecksum($0) }
    for i in copy.indices {
      copy[i] ^= 0x40
      #expect(copy.withUnsafeBytes { _CRC32C.laneChecksum($0) } != base, "byte \(i)")
      copy[i] ^= 0x40
    }
  }

  #if arch(x86_64) && os(Linux)
    /// On the x86-64 machines this project builds on, the instruction is there and used:
    /// a change that silently fell back to the tables would fail here.
    @Test func x86UsesTheInstructionWhenTheCPUHasIt() throws {
      let cpuinfo = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
      #expect(_CRC32C.usesHardware == cpuinfo.contains(" sse4_2"))
    }
  #endif

  @Test func maskRoundTrips() {
    for crc: UInt32 in [0, 1, 0xE306_9283, .max] {
      #expect(_CRC32C.unmask(_CRC32C.mask(crc)) == crc)
      #expect(_CRC32C.mask(crc) != crc)
    }
  }

  @Test func varintsRoundTripAndRejectOverflow() throws {
    let values: [UInt64] = [0, 1, 127, 128, 300, 16_383, 16_384, UInt64(UInt32.max), .max]
    let out = _ByteBuffer()
    for v in values { out.appendVarint(v) }
    var r = _ByteReader(out.bytes)
    for v in values { #expect(try r.readVarint() == v) }
    #expect(r.isAtEnd)
    for v: Int64 in [0, -1, 1, .min, .max] { #expect(_unzigzag(_zigzag(v)) == v) }
    let overflow: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02]
    overflow.withUnsafeBytes { b in
      var r = _ByteReader(b)
      #expect(throws: _CodecError.self) { _ = try r.readVarint() }
    }
    let tooLong = [UInt8](repeating: 0x80, count: 11)
    tooLong.withUnsafeBytes { b in
      var r = _ByteReader(b)
      #expect(throws: _CodecError.self) { _ = try r.readVarint() }
    }
  }
}
