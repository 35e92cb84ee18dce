import Foundation
import RequestSet

/// Library error messages in the tool's words: where a message tells a program to set a
/// library option, the tool names its own flag instead.
enum ToolWording {
  /// Library spellings and what a tool user types instead.
  static let replacements: [(library: String, tool: String)] = [
    ("keep more with LogStoreOptions.keepHistory", "keep more with `requestset compact --keep-history N`"),
    ("keep more with LogStoreOptions.keepHistory)", "keep more with `requestset compact --keep-history N`)"),
    ("LogStoreOptions.keepHistory", "`requestset compact --keep-history N`"),
    (
      "Fix the migration (or the record) and open the store again",
      "Fix the plan (or the record) and run `requestset migrate` again"
    ),
    (
      ", and a read-only store cannot create one. Check the path, or open it for writing once to create it.",
      ". Check the path, or create it with `requestset import FILE --from DATA`."
    ),
    ("Open the log for writing once (which runs it), or run", "Run"),
    ("pick a version from store.history().", "pick a version `requestset history FILE` lists."),
    ("a version that store.history() lists", "a version that `requestset history FILE` lists"),
    ("Migrate it with a LogStore<DynamicRecord> by hand; the log is unchanged.", "The log is unchanged."),
    ("The LogStore at ", "The log "),
    ("the LogStore at ", "the log "),
    ("LogStore<DynamicRecord>", "the log"),
    ("A DynamicRecord ", "A record "),
    ("a DynamicRecord", "a record"),
    (" of DynamicRecord", ""),
    ("DynamicRecord", "record"),
  ]

  /// The message to print for a library error.
  static func message(_ error: RequestSetError) -> String {
    var text = error.message
    for (library, tool) in replacements where text.contains(library) {
      text = text.replacingOccurrences(of: library, with: tool)
    }
    // A number column with text in it is most often missing values written as text ("NA").
    if error.code == .typeMismatch, text.lowercased().contains("string"),
      text.contains("needs numbers") || text.contains("needs values that compare")
    {
      text += " If its text stands for a missing value (as \"NA\"), import the data again with --null NA (or "
        + "the text it uses) to read it as absent; `requestset info FILE` lists each key's kinds."
    }
    return text
  }
}
