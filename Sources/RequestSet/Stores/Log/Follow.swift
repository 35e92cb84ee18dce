#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension _LogState {
  /// For a read-only store: picks up what the writer (in this or another process) has
  /// committed since the store last looked, by polling the file. Returns whether anything
  /// changed.
  ///
  /// The file is polled, not watched: `snapshot()` compares the file's size and inode
  /// with what the store last read. A log that grew is replayed; a log that compaction
  /// replaced (a new inode at the path) is reopened. An interrupted last write is left
  /// out, as on open, so the store always shows a complete prefix of the writer's commits.
  /// The replay reads the whole file: O(*n*) per change seen.
  mutating func followWriter() throws -> Bool {
    guard isReadOnly else { return false }
    var pathInfo = stat()
    var fileInfo = stat()
    guard stat(path, &pathInfo) == 0, fstat(file.fd, &fileInfo) == 0 else { return false }
    var replaced = false
    if pathInfo.st_ino != fileInfo.st_ino || pathInfo.st_dev != fileInfo.st_dev {
      // Non-blocking and checked: whatever now stands at the path may be a FIFO.
      let next = try _FileIO.open(path, O_RDONLY | O_NONBLOCK, hint: "Check the path and its permissions.")
      try _FileIO.checkRegular(next)
      file = next
      replaced = true
    }
    let size = try _FileIO.size(file)
    guard replaced || size > index.end else { return false }
    let mapping = try _Mapping(file, length: Swift.max(size, 1))
    let bytes = mapping.bytes(0, size)
    switch _LogFormat.Header.parse(bytes) {
    case .success(let h): header = h
    case .failure(let reason):
      throw RequestSetError(
        .corruptLog, "\(path) is no longer a readable RequestSet log: \(reason.reason). Reopen the store.")
    }
    let outcome = try _Recovery.replay(bytes, header: header, mode: options.recovery, path: path, idType: Element.ID.self)
    guard replaced || outcome.index.end != index.end else { return false }
    saltState = _LogFormat.saltState(header.salt)
    index = outcome.index
    self.mapping = mapping
    openKinds = _OpenKinds(path: path, mapping: mapping, locations: index.liveLocations, names: index.keys.names)
    writtenKinds = _KindAccumulator()
    try rebuildIndexes()
    // The writer's version when the log says it (its newest commit), and always a new one.
    version = Swift.max(version &+ 1, index.version)
    return true
  }
}
