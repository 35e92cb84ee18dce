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
  ]

  /// The message to print for a library error.
  static func message(_ error: RequestSetError) -> String {
    var text = error.message
    for (library, tool) in replacements where text.contains(library) {
      text = text.replacingOccurrences(of: library, with: tool)
    }
    return text
  }
}
