import FuzzDriver
import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The record the fuzzed logs are opened as.
struct Item: Record {
  struct Place: Codable, Sendable { var city: String }
  var id: Int
  var name: String
  var count: Int
  var note: String?
  var tags: [String]
  var place: Place?
}

// MARK: Building logs that pass the checksums

/// CRC-32C (Castagnoli), as the log format uses it.
let crcTable: [UInt32] = (0..<256).map { i -> UInt32 in
  var c = UInt32(i)
  for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
  return c
}

func crc32c(_ bytes: [UInt8]) -> UInt32 {
  var c: UInt32 = 0xFFFF_FFFF
  for b in bytes { c = crcTable[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
  return ~c
}

func mask(_ crc: UInt32) -> UInt32 { ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8 }

func littleEndian<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }

func varint(_ v: UInt64) -> [UInt8] {
  var v = v
  var out: [UInt8] = []
  while v >= 0x80 {
    out.append(UInt8(v & 0x7F) | 0x80)
    v >>= 7
  }
  out.append(UInt8(v))
  return out
}

let salt: UInt64 = 0x5EED_5EED_5EED_5EED

/// A valid header (version 1, the fixed salt).
func header() -> [UInt8] {
  var h: [UInt8] = [0x52, 0x53, 0x4C, 0x4F, 0x47, 0x0D, 0x0A, 0x1A] + littleEndian(UInt16(1)) + littleEndian(UInt16(0))
  h += littleEndian(salt) + littleEndian(UInt64(1))
  return h + littleEndian(mask(crc32c(h)))
}

/// Turns the fuzzer's bytes into frames with correct checksums: each frame is
/// `type, sequence step, length, payload[length]` from the input, so the fuzzer explores
/// replay and the record decoder rather than the checksum.
func framedLog(_ input: ArraySlice<UInt8>) -> [UInt8] {
  var out = header()
  var sequence: UInt64 = 0
  var i = input.startIndex
  while i + 3 <= input.endIndex {
    let type = input[i] % 8
    let step = input[i + 1] % 16 == 0 ? UInt64(input[i + 1] / 16) : 1  // mostly +1, sometimes a gap
    let length = min(Int(input[i + 2]), input.endIndex - i - 3)
    let payload = Array(input[(i + 3)..<(i + 3 + length)])
    i += 3 + length
    sequence &+= step
    let covered = [type] + varint(UInt64(payload.count)) + varint(sequence) + payload
    out += littleEndian(mask(crc32c(littleEndian(salt) + covered))) + covered
  }
  return out + Array(input[i...])
}

// MARK: The target

let directory: String = {
  let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
  let dir = "\(base)/requestset-logfuzz-\(getpid())"
  mkdir(dir, 0o755)
  return dir
}()

/// Removes every file the last run left (the log, its lock, side files).
func clean() {
  guard let d = opendir(directory) else { return }
  defer { closedir(d) }
  while let entry = readdir(d) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    if name != "." && name != ".." { unlink("\(directory)/\(name)") }
  }
}

func write(_ bytes: [UInt8], to path: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
  guard fd >= 0 else { return }
  defer { close(fd) }
  _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
}

/// Opens the input as a log in every recovery mode and read-only, and when it opens, runs
/// queries (string keys, key paths, a sort, an id lookup) and, writable, a write and a
/// compaction. Thrown errors are the expected answer to bad bytes; a trap, a hang, a
/// SIGBUS or a sanitizer report is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let bytes = input.first.map { $0 & 1 == 1 ? framedLog(input.dropFirst()) : Array(input.dropFirst()) } ?? []
  let path = directory + "/fuzz.rslog"
  let modes: [LogStoreOptions] = [
    .init(), .init(recovery: .failOnAnyDamage), .init(recovery: .stopAtFirstDamage),
    .init(recovery: .skipDamagedFrames), .init(readOnly: true),
  ]
  for options in modes {
    clean()
    write(bytes, to: path)
    guard let store = try? LogStore<Item>(path: path, options: options) else { continue }
    let all = RequestSet(store)
    _ = try? all.fetch()
    _ = try? all.filter("count", .greaterThan, 2).sortBy("name").fetch()
    _ = try? all.filter("place.city", value: "Oslo").fetchCount()
    _ = try? all.filter(\.count < 5).sortBy(\.name).limit(3).fetch()
    _ = try? all.filter("ANY tags == %@", "a").fetch()
    _ = try? store.fetch(id: 1)
    _ = all.explain()
    if !options.readOnly {
      _ = try? store.save(Item(id: 1, name: "x", count: 1, note: nil, tags: ["a"], place: nil))
      _ = try? store.compact()
      _ = try? all.fetch()
    }
    store.close()
  }
  clean()
  return 0
}

/// SwiftPM links an executable target's entry point under this name; it hands the
/// command line to libFuzzer.
@_cdecl("LogFuzzer_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
  runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
}
