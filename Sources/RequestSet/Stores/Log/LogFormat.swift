import Foundation

/// The bytes of a RequestSet log file, as specified in `docs/LOG-FORMAT.md`.
///
/// ```
/// file   = header frame*
/// header = magic[8] version:u16 flags:u16 salt:u64 generation:u64 crc:u32        (32 bytes, LE)
/// frame  = crc:u32 type:u8 length:varint sequence:varint payload[length]
/// ```
/// A frame's `crc` is the masked CRC-32C of the file's salt (8 bytes, little-endian)
/// followed by every byte of the frame after the `crc` field, so a frame copied from
/// another file (another salt) never verifies.
enum _LogFormat {
  /// "RSLOG\r\n\u{1A}": the line ending and the DOS end-of-file byte catch transfers that
  /// mangle binary files, as PNG's signature does.
  static let magic: [UInt8] = [0x52, 0x53, 0x4C, 0x4F, 0x47, 0x0D, 0x0A, 0x1A]
  static let version: UInt16 = 1
  static let headerSize = 32
  /// The largest payload a frame may carry: bounds what a damaged length can make a
  /// reader checksum or allocate.
  static let maxPayload = 1 << 24
  /// The most bytes a frame header (crc, type, two varints) takes.
  static let maxFrameHeader = 4 + 1 + 5 + 10

  enum FrameType: UInt8 {
    /// Insert or replace one record, committed on its own. Payload: id value, record value.
    case put = 1
    /// Delete one record. Payload: id value.
    case delete = 2
    /// One record of a batch: applied only when the batch's commit frame is read.
    case batchPut = 3
    /// Commits the batch frames just before it. Payload: varint count of those frames,
    /// then, from writers that stamp commits, the commit's time and version (see
    /// `CommitStamp`), which older readers skip.
    case commit = 4
    /// Defines field names. Payload: (varint key id, varint byte count, UTF-8 name)*.
    case keys = 5
    /// One delete of a batch. Payload: id value.
    case batchDelete = 6
    /// Replaces the set of secondary index definitions; committed on its own. Payload:
    /// (flags byte, bit 0 = unique; varint byte count; UTF-8 key)*. Index entries are never
    /// stored in the log: the store rebuilds them from the records on open, or reads them
    /// from a current checkpoint.
    case indexes = 7
  }

  struct Header: Equatable {
    var salt: UInt64
    var generation: UInt64

    func encoded() -> [UInt8] {
      let out = _ByteBuffer(capacity: headerSize)
      magic.withUnsafeBytes { out.append($0) }
      out.appendLittleEndian(version)
      out.appendLittleEndian(UInt16(0))
      out.appendLittleEndian(salt)
      out.appendLittleEndian(generation)
      out.appendLittleEndian(_CRC32C.mask(_CRC32C.checksum(out.bytes)))
      return out.array
    }

    /// Reads a header, or says why the bytes are not one.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<Header, _CodecError> {
      guard magic.prefix(bytes.count).elementsEqual(bytes.prefix(8)) else {
        return .failure(_CodecError(offset: 0, reason: "the file does not start with the RequestSet log signature"))
      }
      guard bytes.count >= headerSize else {
        return .failure(_CodecError(offset: 0, reason: "the file is \(bytes.count) bytes, shorter than a log header"))
      }
      var r = _ByteReader(bytes, position: 8)
      do throws(_CodecError) {
        let v = try r.readLittleEndian(UInt16.self)
        _ = try r.readLittleEndian(UInt16.self)
        let salt = try r.readLittleEndian(UInt64.self)
        let generation = try r.readLittleEndian(UInt64.self)
        let stored = try r.readLittleEndian(UInt32.self)
        let actual = _CRC32C.mask(_CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28])))
        guard stored == actual else { return .failure(_CodecError(offset: 28, reason: "the header checksum does not match")) }
        guard v == version else {
          return .failure(_CodecError(offset: 8, reason: "format version \(v) is not supported (this build reads version \(version))"))
        }
        return .success(Header(salt: salt, generation: generation))
      } catch {
        return .failure(error)
      }
    }
  }

  /// The CRC state after the salt: every frame's checksum continues from it.
  static func saltState(_ salt: UInt64) -> UInt32 {
    withUnsafeBytes(of: salt.littleEndian) { _CRC32C.update(_CRC32C.initial, $0) }
  }

  /// Appends one frame to `out`; returns the offset of its payload within `out`.
  @discardableResult
  static func appendFrame(
    _ type: FrameType, sequence: UInt64, payload: UnsafeRawBufferPointer, saltState: UInt32, to out: _ByteBuffer
  ) -> Int {
    precondition(payload.count <= maxPayload, "frame payload over the cap; callers check it first")
    let start = out.count
    out.appendLittleEndian(UInt32(0))
    out.append(type.rawValue)
    out.appendVarint(UInt64(payload.count))
    out.appendVarint(sequence)
    let payloadAt = out.count
    out.append(payload)
    let covered = UnsafeRawBufferPointer(start: out.base + start + 4, count: out.count - start - 4)
    out.storeLittleEndian(_CRC32C.mask(_CRC32C.finish(_CRC32C.update(saltState, covered))), at: start)
    return payloadAt
  }

  /// A frame read from a file.
  struct Frame {
    var type: FrameType
    var sequence: UInt64
    /// Offsets in the file.
    var start: Int
    var payloadStart: Int
    var payloadLength: Int
    var end: Int { payloadStart + payloadLength }
    var headerLength: Int { payloadStart - start }
  }

  enum Parse {
    case frame(Frame)
    /// The frame runs past the end of the file.
    case incomplete(String)
    /// The bytes are no valid frame.
    case damaged(String)
  }

  /// Reads the frame at `offset` of `file` and verifies its checksum.
  static func parseFrame(_ file: UnsafeRawBufferPointer, at offset: Int, saltState: UInt32) -> Parse {
    let size = file.count
    guard size - offset >= 7 else { return .incomplete("\(size - offset) bytes left, fewer than a frame header") }
    var r = _ByteReader(file, position: offset)
    let stored: UInt32
    let typeByte: UInt8
    let length: UInt64
    let sequence: UInt64
    do throws(_CodecError) {
      stored = try r.readLittleEndian(UInt32.self)
      typeByte = try r.readByte()
      length = try r.readVarint()
      sequence = try r.readVarint()
    } catch {
      return r.isAtEnd ? .incomplete("the frame header runs past the end of the file") : .damaged("\(error.reason)")
    }
    guard let type = FrameType(rawValue: typeByte) else { return .damaged("unknown frame type \(typeByte)") }
    guard length <= UInt64(maxPayload) else { return .damaged("frame length \(length) exceeds the \(maxPayload)-byte cap") }
    let payloadStart = r.position
    guard Int(length) <= size - payloadStart else {
      return .incomplete("the frame claims \(length) payload bytes, \(size - payloadStart) remain")
    }
    let covered = UnsafeRawBufferPointer(rebasing: file[(offset + 4)..<(payloadStart + Int(length))])
    guard _CRC32C.mask(_CRC32C.finish(_CRC32C.update(saltState, covered))) == stored else {
      return .damaged("checksum mismatch")
    }
    return .frame(
      Frame(type: type, sequence: sequence, start: offset, payloadStart: payloadStart, payloadLength: Int(length)))
  }

  /// The offset of the first frame at or after `offset` that verifies with a sequence
  /// number above `minimumSequence`, or nil: tells damage in the middle of a log (valid
  /// frames follow) from a torn tail (nothing valid follows).
  static func resync(_ file: UnsafeRawBufferPointer, from offset: Int, minimumSequence: UInt64, saltState: UInt32) -> Int? {
    var at = offset
    while at + 7 <= file.count {
      // Cheap filters first: a frame type byte, then the full parse and checksum.
      let t = file[at + 4]
      if t >= 1 && t <= 6, case .frame(let f) = parseFrame(file, at: at, saltState: saltState), f.sequence > minimumSequence {
        return at
      }
      at += 1
    }
    return nil
  }
}

extension _LogFormat {
  /// What a commit frame records after its count: when the commit was written and which
  /// version of the store it made. Readers that predate it read the count and skip it.
  struct CommitStamp: Equatable {
    /// Microseconds since 1970-01-01 UTC; never less than the previous commit's.
    var time: UInt64
    /// The store's version after this commit: 1 for a log's first commit, +1 per commit,
    /// and kept across compaction.
    var version: UInt64
  }

  /// The payload of a commit frame: its count, then the stamp.
  static func commitPayload(count: Int, stamp: CommitStamp) -> _ByteBuffer {
    let out = _ByteBuffer(capacity: 32)
    out.appendVarint(UInt64(count))
    out.appendVarint(stamp.time)
    out.appendVarint(stamp.version)
    return out
  }

  /// Reads a commit frame's payload: the count, and the stamp when the writer wrote one.
  /// Bytes after the stamp are left for later versions of the format.
  static func parseCommit(_ payload: UnsafeRawBufferPointer) throws(_CodecError) -> (count: Int, stamp: CommitStamp?) {
    var r = _ByteReader(payload)
    let count = try r.readLength(max: Int.max)
    guard !r.isAtEnd else { return (count, nil) }
    let time = try r.readVarint()
    let version = try r.readVarint()
    return (count, CommitStamp(time: time, version: version))
  }

  /// Now, in microseconds since 1970, for a commit's stamp; `previous` when the clock
  /// reads earlier than it, so times never go backwards within a log.
  static func commitTime(after previous: UInt64) -> UInt64 {
    Swift.max(micros(Date()), previous)
  }

  /// The payload of an `.indexes` frame.
  static func indexDefinitionsPayload(_ definitions: [RequestIndex]) -> _ByteBuffer {
    let out = _ByteBuffer(capacity: 64)
    for d in definitions {
      out.append(d.unique ? 1 : 0)
      let name = d._identity  // a composite index's keys joined by U+001F
      out.appendVarint(UInt64(name.utf8.count))
      out.append(name)
    }
    return out
  }

  /// Reads an `.indexes` frame's payload.
  static func parseIndexDefinitions(_ payload: UnsafeRawBufferPointer) throws(_CodecError) -> [RequestIndex] {
    var r = _ByteReader(payload)
    var out: [RequestIndex] = []
    while !r.isAtEnd {
      let flags = try r.readByte()
      let n = try r.readLength(max: r.remaining)
      let key = String(decoding: try r.readBytes(n), as: UTF8.self)
      out.append(RequestIndex(keys: _CompositeKey.keys(of: key), unique: flags & 1 != 0))
    }
    return out
  }
}
