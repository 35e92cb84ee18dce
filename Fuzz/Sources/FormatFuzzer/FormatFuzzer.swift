import FuzzDriver
import RequestSet

/// The record the fuzzed format strings query.
struct Item: Record {
  struct Place: Codable, Sendable { var city: String }
  var id: Int
  var name: String
  var count: Int
  var price: Double
  var note: String?
  var tags: [String]
  var place: Place?
}

let items: [Item] = [
  Item(id: 1, name: "alpha", count: 3, price: 1.5, note: "é", tags: ["a", "b"], place: Item.Place(city: "Oslo")),
  Item(id: 2, name: "Beta", count: 0, price: -2, note: nil, tags: [], place: nil),
  Item(id: 3, name: "gamma*", count: 7, price: 1e9, note: "x", tags: ["b"], place: Item.Place(city: "")),
]

/// Parses the input as a format string (with a few arguments for its substitutions) and,
/// when it parses, evaluates it over a small array. Any trap, hang or sanitizer report is
/// a finding; thrown errors are the expected answer to bad input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  let arguments: [(any Sendable)?] = ["name", 3, 2.5, "alp*", ["a", "b"], nil, true]
  if let filter = try? RequestFilter<Item>(format: text, arguments: arguments) {
    _ = try? RequestSet(items).filter(filter).fetch()
  }
  _ = try? RequestSet(items).filter(where: [text, "==", text]).fetch()
  return 0
}

/// SwiftPM links an executable target's entry point under this name; it hands the
/// command line to libFuzzer.
@_cdecl("FormatFuzzer_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
  runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
}
