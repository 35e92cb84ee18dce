// A sort key through a relation that the record's store may run itself.
//
// Over stores that share a database (`QueryPushdownStore.location`), `sortBy("owner.name")`
// or `sortBy("visits.@count")` is a `StoreSortKey` whose `related` value the store reads
// with a correlated subquery in its own statement, when its reader supports it
// (`StoreQueryReader.support(forRelatedSort:)`). Wherever else the sort runs (a reader that
// declines it, a part of the stage that runs in process before it), it runs as on stores in
// two files: the related values are read in one query, keyed by the id the record holds,
// and the records sorted in process. That read happens only then, once, when the executor
// asks for the sort (`_TypedSort.inProcess()`), and an error reading it is thrown there.

/// A sort key through a relation, kept as a store key with the in-process sort read on
/// first use (see the top of this file).
@usableFromInline
struct _RelatedSort<Element>: Sendable {
  /// The key the record's store runs (``StoreSortKey/related`` set).
  let storeKey: StoreSortKey
  /// The `relation` lines of `explain()` when the store runs it.
  let notes: [String]
  /// The first `relation` line of `explain()` when the sort runs in process.
  let line: String
  /// The sort with the related values read, and the `relation` lines of the related
  /// store's own relations that read resolved.
  private let _read: _Lazy<Result<(sort: _TypedSort<Element>, notes: [String]), RequestSetError>>

  init(
    storeKey: StoreSortKey, notes: [String], line: String,
    read: @escaping @Sendable () throws -> (sort: _TypedSort<Element>, notes: [String])
  ) {
    self.storeKey = storeKey
    self.notes = notes
    self.line = line
    _read = _Lazy {
      do {
        return .success(try read())
      } catch let error as RequestSetError {
        return .failure(error)
      } catch {
        return .failure(RequestSetError(.invalidRelation, "\(error)", underlying: error))
      }
    }
  }

  /// The sort as it runs in process, its values read from the related store once.
  /// - Throws: What reading the related values threw, as a `RequestSetError`.
  func sort() throws -> _TypedSort<Element> { try _read.value.get().sort }

  /// The `relation` lines of `explain()` when the sort runs in process (reading the
  /// related values, if no sort read them yet).
  var inProcessNotes: [String] {
    switch _read.value {
    case .success(let read): return [line] + read.notes.map { "  " + $0 }
    case .failure(let error): return [line + " (cannot be read: \(error.message))"]
    }
  }
}

extension _TypedSort {
  /// The sort key as it runs in process: for a sort through a relation a store could
  /// have run (``related``), the sort over the related values, read now if no sort read
  /// them yet; otherwise itself. Every in-process sort asks for it first.
  /// - Throws: What reading the related values threw.
  func inProcess() throws -> _TypedSort {
    guard let related else { return self }
    return try related.sort()
  }
}

extension _Query {
  /// The `relation` lines of `explain()` for the first stage's sorts through a relation
  /// that a store could have run: `notes` when the store runs the sort (`pushed`), else
  /// those of reading the related values.
  func relatedSortNotes(pushed: Bool) -> [String] {
    var lines: [String] = []
    for key in stages[0].sort {
      guard case .typed(let t) = key, let related = t.related else { continue }
      lines += pushed ? related.notes : related.inProcessNotes
    }
    return lines
  }
}
