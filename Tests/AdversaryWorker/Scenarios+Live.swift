// Live request sets and streams: arguments a program can pass them.

import Dispatch
import RequestSet

private struct StreamedItem: Record {
  var id: Int
}

private struct Aged: Record {
  var id: Int
  var age: Int
}

private struct Measured: Record {
  var id: Int
  var value: Double
}

/// The first state of a sectioned live set as "key:ids" words, awaited from a thread
/// that is not a task's.
private func firstSections<Key>(_ sections: RequestSetSections<Measured, Key>) throws -> String {
  let box = Described()
  Task {
    do {
      var states = sections.makeAsyncIterator()
      if let state = try await states.next() {
        box.text = state.sections.map { "\($0.key):" + $0.records.map { String($0.id) }.joined(separator: ",") }
          .joined(separator: " ")
      }
    } catch {
      box.failure = error
    }
    box.done.signal()
  }
  box.done.wait()
  if let failure = box.failure { throw failure }
  return box.text
}

/// A value handed from the task that streams to the thread that waits for it.
private final class Streamed: @unchecked Sendable {
  // @unchecked: `ids` is written by the one streaming task before it signals `done`, and
  // read by the waiting thread only after `done.wait()` returns.
  var ids: [Int] = []
  var failure: (any Error)?
  let done = DispatchSemaphore(value: 0)
}

/// Text handed from a task to the thread that waits for it.
private final class Described: @unchecked Sendable {
  // @unchecked: `text` and `failure` are written by the one task before it signals
  // `done`, and read by the waiting thread only after `done.wait()` returns.
  var text = ""
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
    },
    // asyncSumOverflow: `async.sum(\.age)` of two `Int.max - 1` ages on a MemoryStore;
    // prints the error's code, as the synchronous `sum(\.age)` throws it.
    "asyncSumOverflow": { _ in
      let store = MemoryStore<Aged>()
      try store.insert(contentsOf: [Aged(id: 1, age: .max - 1), Aged(id: 2, age: .max - 1)])
      let box = Described()
      Task {
        do {
          box.text = "sum \(try await RequestSet(store).async.sum(\.age))"
        } catch {
          box.failure = error
        }
        box.done.signal()
      }
      box.done.wait()
      if let error = box.failure as? RequestSetError { say("error \(error.code)") } else { say(box.text) }
    },
    // sectionsNaN: sections keyed by a Double that is NaN for some records, by string key
    // and by key path; prints each form's sections as "key:ids".
    "sectionsNaN": { _ in
      let store = MemoryStore<Measured>()
      try store.insert(contentsOf: [
        Measured(id: 1, value: .nan), Measured(id: 2, value: 1), Measured(id: 3, value: .nan),
        Measured(id: 4, value: -0.0), Measured(id: 5, value: 0),
      ])
      let set = RequestSet(store).sortBy(\.id)
      say("key " + (try firstSections(set.sectioned(by: "value"))))
      say("path " + (try firstSections(set.sectioned(by: \.value))))
    },
  ]
}
