import ArgumentParser
import Foundation
import RequestSet

/// `requestset update FILE FILTER --set KEY=VALUE`: changes the matching records in one commit.
struct Update: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Set or remove keys of the records a filter matches, all in one commit.",
    discussion: """
      requestset update FILE "species == 'Cow'" --set age=4 --set name='"Daisy"' changes \
      every matching record, all or nothing. VALUE is JSON (4, 4.0, true, null, "text", \
      [1,2], {"city":"Oslo"}); text that is not JSON is a string, so --set name=Daisy works \
      too. A dotted KEY (owner.city) sets a nested value. The id cannot be changed. Give \
      --all instead of a filter to change every record.
      """)

  @Argument(help: "The log file.") var file: String
  @OptionGroup var query: QueryOptions
  @Option(
    name: .customLong("set"),
    help: ArgumentHelp("Set KEY to VALUE (JSON, or else a string).", valueName: "KEY=VALUE"))
  var assignments: [String] = []
  @Option(name: .customLong("unset"), help: ArgumentHelp("Remove KEY from the records.", valueName: "KEY"))
  var removals: [String] = []
  @Flag(help: "Change every record (instead of giving a filter).") var all = false

  func validate() throws {
    if query.filter == nil && !all {
      throw ValidationError("Give a filter (\"species == 'Cow'\") or --all to change every record.")
    }
    if assignments.isEmpty && removals.isEmpty {
      throw ValidationError("Give at least one --set KEY=VALUE or --unset KEY.")
    }
    for assignment in assignments {
      guard let eq = assignment.firstIndex(of: "="), eq != assignment.startIndex else {
        throw ValidationError("--set \(assignment) has no KEY=VALUE; write it as --set age=4.")
      }
      if assignment[..<eq] == "id" {
        throw ValidationError("--set cannot change the id; delete the record and import it anew.")
      }
    }
    if removals.contains("id") { throw ValidationError("--unset cannot remove the id.") }
    // As deep as JSON input may nest: each dot is one more object, built by recursion.
    let keys = assignments.map { String($0[..<$0.firstIndex(of: "=")!]) } + removals
    for key in keys {
      let depth = FieldValue.fieldNames(inKey: key).count - 1
      guard depth <= JSONReader.maxDepth else {
        let shown = key.count > 40 ? key.prefix(40) + "…" : Substring(key)
        throw ValidationError(
          "The key \"\(shown)\" nests \(depth) objects deep; give a key at most \(JSONReader.maxDepth) deep.")
      }
    }
  }

  /// The parsed assignments: dotted key paths and values.
  var changes: [(path: [String], value: FieldValue?)] {
    assignments.map { assignment in
      let eq = assignment.firstIndex(of: "=")!
      let text = String(assignment[assignment.index(after: eq)...])
      var parser = JSONReader()
      let value = (try? Array(text.utf8).withUnsafeBytes { try parser.parse($0) }) ?? .string(text)
      return (FieldValue.fieldNames(inKey: String(assignment[..<eq])), value)
    } + removals.map { (FieldValue.fieldNames(inKey: $0), nil) }
  }

  func run() throws {
    try reportingErrors {
      let store = try openWriter(file)
      defer { store.close() }
      let sizeBefore = store.fileSize
      let records = try query.set(store).fetch()
      let changes = self.changes
      let saves = records.map { record -> RecordChange<DynamicRecord> in
        var fields = record.fields
        for (path, value) in changes { fields = Update.setting(value, at: path[...], in: fields) }
        return .save(DynamicRecord(id: record.id, fields: fields))
      }
      if !saves.isEmpty { try store.apply(saves, ifVersion: nil) }
      try KeyOrder.noteWrite(
        to: file, sizeBefore: sizeBefore, sizeAfter: store.fileSize,
        newKeys: assignments.map {
          String($0[..<$0.firstIndex(of: "=")!])
        })
      print("updated \(saves.count) record\(saves.count == 1 ? "" : "s") in \(file)")
    }
  }

  /// `fields` with the value at a path set (nil removes it); objects on the way are made.
  static func setting(_ value: FieldValue?, at path: ArraySlice<String>, in fields: [String: FieldValue])
    -> [String: FieldValue]
  {
    var fields = fields
    guard let head = path.first else { return fields }
    if path.count == 1 {
      fields[head] = value
    } else {
      var inner: [String: FieldValue] = [:]
      if case .object(let existing)? = fields[head] { inner = existing }
      fields[head] = .object(setting(value, at: path.dropFirst(), in: inner))
    }
    return fields
  }
}

/// `requestset delete FILE FILTER`: deletes the matching records in one commit.
struct Delete: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Delete the records a filter matches, all in one commit.",
    discussion: """
      requestset delete FILE "year < 2013" deletes every matching record, all or nothing; \
      --sort and --limit choose among them (delete the 10 oldest: --sort time --limit 10). \
      Give --all instead of a filter to delete every record. The space is reclaimed by \
      `compact`.
      """)

  @Argument(help: "The log file.") var file: String
  @OptionGroup var query: QueryOptions
  @Flag(help: "Delete every record (instead of giving a filter).") var all = false

  func validate() throws {
    if query.filter == nil && !all {
      throw ValidationError("Give a filter (\"species == 'Cow'\") or --all to delete every record.")
    }
  }

  func run() throws {
    try reportingErrors {
      let store = try openWriter(file)
      defer { store.close() }
      let sizeBefore = store.fileSize
      let ids = try query.set(store).fetch().map { RecordChange<DynamicRecord>.delete(id: $0.id) }
      if !ids.isEmpty { try store.apply(ids, ifVersion: nil) }
      try KeyOrder.noteWrite(to: file, sizeBefore: sizeBefore, sizeAfter: store.fileSize, newKeys: [])
      print(
        "deleted \(ids.count) record\(ids.count == 1 ? "" : "s") from \(file) (\(store.count) record\(store.count == 1 ? "" : "s") now)"
      )
    }
  }
}
