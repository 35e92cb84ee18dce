import Foundation
import RequestSet

/// Writes a set's records to standard output as JSON Lines, a JSON array or CSV, a batch
/// at a time, so an export of any size runs in bounded memory.
enum RecordStream {
  /// Records read from the log at a time.
  static let batchSize = 4_096

  /// The CSV columns for `set`: from the log's complete ``KeyOrder`` when it has one (no
  /// extra pass; ``write(_:format:order:csvColumns:total:checkColumns:)`` then checks that
  /// every record's keys have a column), else from a first pass over the records.
  static func csvColumns(
    _ set: RequestSet<DynamicRecord>, store: LogStore<DynamicRecord>, order: KeyOrder, past: Bool
  )
    async throws -> (columns: [String], fromKeyOrder: Bool)
  {
    if !past && order.isComplete(forLogSize: store.fileSize) {
      return (CSVRecordWriter.columns(of: order), true)
    }
    var shapes = ShapeCollector()
    for try await record in set.stream(batchSize: batchSize) { shapes.add(record) }
    return (CSVRecordWriter.columns(of: shapes.records, order: order), false)
  }

  /// Writes every record of `set` in `format` (`jsonl`, `json` or `csv`; a table is no stream).
  ///
  /// - Parameter checkColumns: For CSV under columns taken from `FILE.keys`: check that
  ///   every record's top-level keys have a column, and fail after writing if one did not
  ///   (the list was out of date), rather than leave a column out silently.
  /// - Throws: ``ToolError`` when `checkColumns` finds a key without a column.
  static func write(
    _ set: RequestSet<DynamicRecord>, format: OutputFormat, order: KeyOrder, csvColumns: [String],
    total: Int?,
    checkColumns: Bool = false, file: String = ""
  ) async throws {
    let topLevel = Set(csvColumns.map { FieldValue.fieldNames(inKey: $0).first ?? $0 })
    var uncovered = KeyOrderBuilder()
    let output = Output()
    let progress = Progress()
    var json = RecordWriter(order: order)
    var csv = CSVRecordWriter(columns: csvColumns)
    var line: [UInt8] = []
    line.reserveCapacity(1 << 10)
    switch format {
    case .csv: csv.appendHeader(to: &line)
    case .json: line.append(UInt8(ascii: "["))
    case .jsonl, .table: break
    }
    var written = 0
    for try await record in set.stream(batchSize: batchSize) {
      switch format {
      case .jsonl:
        json.append(record, to: &line)
        line.append(0x0A)
      case .json:
        line.append(contentsOf: written == 0 ? [0x0A] : [UInt8(ascii: ","), 0x0A])
        json.append(record, to: &line)
      case .csv, .table:
        // A key without a column is one no column's top-level field names.
        csv.append(record, to: &line) { key in
          if checkColumns && !topLevel.contains(key) { uncovered.add([key]) }
        }
      }
      written += 1
      if line.count >= 1 << 16 {
        output.write(bytes: line)
        line.removeAll(keepingCapacity: true)
      }
      if written & 0xFFF == 0 {
        progress.update("wrote \(written)\(total.map { " of \($0)" } ?? "") records")
      }
    }
    if format == .json { line.append(contentsOf: written == 0 ? Array("]\n".utf8) : Array("\n]\n".utf8)) }
    output.write(bytes: line)
    output.flush()
    progress.finish()
    if !uncovered.keys.isEmpty {
      throw ToolError(
        "\(KeyOrder.path(for: file)) does not list every key of \(file) (a program wrote to it), so the CSV above has "
          + "no column for \(uncovered.keys.joined(separator: ", ")). Delete \(KeyOrder.path(for: file)) and run the "
          + "command again: the columns are then read from the records.")
    }
  }
}

/// The union of records' shapes: each top-level key once, and for an object every nested
/// key any record gives it (one value per key), so CSV columns cover every record.
struct ShapeCollector {
  private var fields: [String: FieldValue] = [:]

  mutating func add(_ record: DynamicRecord) {
    for (key, value) in record.fields {
      if case .object(let nested) = value, case .object(let known)? = fields[key] {
        fields[key] = .object(ShapeCollector.merge(known, nested))
      } else if fields[key] == nil || !ShapeCollector.isObject(fields[key]!) {
        fields[key] = value
      }
    }
  }

  /// One record per shape, for ``CSVRecordWriter/columns(of:order:)``.
  var records: [DynamicRecord] { [DynamicRecord(id: .null, fields: fields)] }

  private static func isObject(_ v: FieldValue) -> Bool {
    if case .object = v { return true }
    return false
  }

  private static func merge(_ a: [String: FieldValue], _ b: [String: FieldValue]) -> [String: FieldValue] {
    var out = a
    for (k, v) in b {
      if case .object(let x)? = out[k], case .object(let y) = v {
        out[k] = .object(merge(x, y))
      } else if out[k] == nil || !isObject(out[k]!) {
        out[k] = v
      }
    }
    return out
  }
}
