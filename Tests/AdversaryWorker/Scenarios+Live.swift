// Live request sets and streams: arguments a program can pass them.

import Dispatch
import RequestSet

private struct StreamedItem: Record {
  var id: Int
}

/// A value handed from the task that streams to the thread that waits for it.
private final class Streamed: @unchecked Sendable {
  // @unchecked: `ids` is written by the one streaming task before it signals `done`, and
  // read by the waiting thread only after `done.wait()` returns.
  var ids: [Int] = []
  var failure: (any Error)?
  let done = DispatchSemaphore(value: 0)
}

extension Scenarios {
  static let live: [String: Scenario] = [
    // streamBatchSize <n>: streams six records with `stream(batchSize: n)`.
    "streamBatchSize": { arguments in
      let batchSize = Int(arguments.first ?? "") ?? 0
      let stream = RequestSet((1...6).map { StreamedItem(id: $0) }).stream(batchSize: batchSize)
      let streamed = Streamed()
      Task {
        do {
          for try await item in stream { streamed.ids.append(item.id) }
        } catch {
          streamed.failure = error
        }
        streamed.done.signal()
      }
      streamed.done.wait()
      if let failure = streamed.failure { throw failure }
      say("streamed " + streamed.ids.map(String.init).joined(separator: ", "))
    }
  ]
}
