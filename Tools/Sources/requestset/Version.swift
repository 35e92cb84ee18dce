/// The tool's version, printed by `requestset --version`: the one place it is defined.
enum ToolVersion {
  /// The version as `requestset --version` prints it.
  static let current = "0.1.0"
}
