import ArgumentParser
import Foundation
import RequestSet

/// `requestset verify FILE`: every frame and checksum; exit status 1 unless the log is clean.
struct Verify: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Read every frame, check every checksum, and report each damaged range.",
    discussion: """
      Prints each damaged range with its offset and what each recovery mode would do about \
      it. Exits with status 0 only when the log is clean; 1 when it is damaged or is no log.
      """)

  @Argument(help: "The log file.") var file: String

  func run() throws {
    let report = try reportingErrors {
      let progress = Progress()
      progress.update("verifying \(file)…", force: true)
      defer { progress.finish() }
      return try LogStore<DynamicRecord>.inspect(path: file)
    }
    print(Verify.render(report), terminator: "")
    if !report.isClean { throw ExitCode.failure }
  }

  static func render(_ r: LogInspection) -> String {
    var out = "\(r.path): \(r.frameCount) intact frames, \(r.recordCount) records, \(r.fileSize) bytes\n"
    if r.isClean {
      out += "clean: every frame and record checks out\n"
      return out
    }
    for d in r.damage { out += "damaged: offset \(d.offset), \(d.byteCount) bytes: \(d.reason)\n" }
    if let t = r.tornTail {
      out += "interrupted write: offset \(t.offset), \(t.byteCount) bytes at the end\n"
    }
    for offset in r.unreadableRecords {
      out += "unreadable record: offset \(offset) (its frame is intact, its value does not parse)\n"
    }
    out += "recovery modes (`requestset recover FILE --mode MODE`):\n"
    for o in r.recovery {
      out += "  \(o.mode): "
      guard o.opens else {
        out += "refuses to open\n"
        continue
      }
      var parts = ["keeps \(o.recordCount) records"]
      if let cut = o.cutAt {
        parts.append("cuts the file at offset \(cut) (the cut bytes are kept in \(r.path).damaged-\(cut))")
      }
      if o.rewrites {
        parts.append("rewrites the file without the damage (the old file is kept in \(r.path).damaged-0)")
      }
      if o.droppedRecords > 0 { parts.append("leaves out \(o.droppedRecords) records of damaged batches") }
      out += parts.joined(separator: "; ") + "\n"
    }
    if !r.unreadableRecords.isEmpty {
      out +=
        "no recovery mode changes an unreadable record: it was written that way (by another program, or a newer RequestSet)\n"
    }
    return out
  }
}
