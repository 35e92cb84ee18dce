/// libFuzzer's driver, for programs that bring their own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
  _ argc: UnsafeMutablePointer<Int32>,
  _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
  _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32
) -> Int32

/// Hands the command line to libFuzzer, which calls `target` with each input.
///
/// SwiftPM links an executable target's entry point as `<Target>_main`; each fuzz target
/// defines that symbol and calls this:
///
/// ```swift
/// @_cdecl("PlanFuzzer_main")
/// func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
///   runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
/// }
/// ```
public func runLibFuzzer(
  _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
  _ target: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32
) -> Int32 {
  var count = argc
  var arguments = argv
  return LLVMFuzzerRunDriver(&count, &arguments, target)
}
