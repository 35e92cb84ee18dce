import FuzzDriver
import RequestSet

/// Reads the input as the tool's `import` does, as CSV and as JSON Lines, through the
/// tool's own readers (in `Tool/`): fed in chunks whose size the first byte picks (1 to 64
/// bytes, so rows, quoted cells, line breaks and multi-byte characters split across chunks
/// as they do between a large file's reads), with a `--null` text when the second byte is
/// odd. Every record read is made into a `DynamicRecord`, as the importer writes it. Any
/// trap, hang or sanitizer report is a finding; bad lines are the expected answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard size >= 2 else { return 0 }
  let chunkSize = Int(data[0] % 64) + 1
  let nullText: String? = data[1] & 1 == 1 ? "NA" : nil
  let input = UnsafeRawBufferPointer(start: data + 2, count: size - 2)
  var records = 0
  var problems = 0
  let body: (Result<InputRecord, InputProblem>) -> Void = { result in
    switch result {
    case .success(let record):
      let id = record.id ?? FieldValue.int(records)
      _ = DynamicRecord(id: id, fields: record.fields)
      records += 1
    case .failure(let problem):
      _ = "line \(problem.line): \(problem.reason)"
      problems += 1
    }
  }
  var csv = CSVReader(nullText: nullText)
  var jsonl = JSONLinesReader(nullText: nullText)
  var start = 0
  while start < input.count {
    let end = min(start + chunkSize, input.count)
    let chunk = UnsafeRawBufferPointer(rebasing: input[start..<end])
    csv.feed(chunk, body)
    jsonl.feed(chunk, body)
    start = end
  }
  csv.finish(body)
  jsonl.finish(body)
  _ = csv.headerKeys
  _ = jsonl.keyOrder.keys
  return 0
}

/// SwiftPM links an executable target's entry point under this name; it hands the
/// command line to libFuzzer.
@_cdecl("ImportFuzzer_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
  runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
}
