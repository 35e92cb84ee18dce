import Observation
import Synchronization

/// A live request set as an observable object: its current records, their count and
/// the last error, updated after every commit that changes the result, for a view to
/// show or a server to read.
///
/// It follows the set's ``RequestSet/changes`` and applies each new state on the actor
/// given as `updatingOn:` (the caller's, by default; the main actor for UI). It adopts
/// `Observable` (the Observation framework, on Linux and Apple platforms alike), so
/// SwiftUI redraws what reads it, and `withObservationTracking` reports each change:
/// one notification per state, none for a commit that leaves the result as it was.
///
/// ```swift
/// @MainActor
/// final class Herd {
///   let cows = LiveResults(
///     RequestSet(store).filter("species", value: "Cow").sortBy(\.name), updatingOn: MainActor.shared)
/// }
///
/// struct CowList: View {                  // SwiftUI
///   let herd: Herd
///   var body: some View {
///     List(herd.cows.records) { Text($0.name) }
///       .overlay { if let error = herd.cows.error { Text("\(error)") } }
///   }
/// }
/// ```
///
/// Change its ``query`` while it is observed and the new query runs; until its first
/// state arrives the object keeps the old records, and then observers see one new state.
///
/// ```swift
/// let old = LiveResults(RequestSet(store).filter(\.age > 10))   // a server, no SwiftUI
/// old.query = RequestSet(store).filter(\.age > 12).limit(50)     // retarget
/// print(old.count, old.records.map(\.name))
/// ```
///
/// After an error (the store closed, a bad query) the object keeps the last records and
/// ``error``, and stops following; assign ``query`` (even the same one) to start again.
/// It stops when it is released or ``cancel()`` is called.
public final class LiveResults<Element: Record>: Observable, Sendable {
  private struct State: Sendable {
    var records: [Element] = []
    var version: UInt64 = 0
    var error: (any Error)? = nil
    var isLoaded = false
    var query: RequestSet<Element>
    /// Bumped by every retarget: a state of an older query is dropped.
    var generation = 0
    var task: Task<Void, Never>? = nil
  }
  private let _state: Mutex<State>
  private let _registrar = ObservationRegistrar()
  /// Where states are applied (and observers told); nil: wherever the follower runs.
  private let _actor: (any Actor)?

  /// Starts following `query`.
  ///
  /// ```swift
  /// let cows = LiveResults(RequestSet(store).filter("species", value: "Cow"), updatingOn: MainActor.shared)
  /// ```
  /// - Parameters:
  ///   - query: The request set to follow.
  ///   - actor: The actor each new state is applied on, so observers run there: the main
  ///     actor for UI. By default the caller's (`#isolation`); nil applies states on the
  ///     task that follows the store.
  public init(_ query: RequestSet<Element>, updatingOn actor: (any Actor)? = #isolation) {
    _state = Mutex(State(query: query))
    _actor = actor
    _start()
  }

  deinit {
    _state.withLock { $0.task?.cancel() }
  }

  /// The current records, in the query's order (empty until the first state arrives).
  ///
  /// ```swift
  /// for cow in cows.records { print(cow.name) }
  /// ```
  public var records: [Element] {
    _registrar.access(self, keyPath: \._observedState)
    return _state.withLock { $0.records }
  }

  /// The number of current records.
  ///
  /// ```swift
  /// Text("\(cows.count) cows")
  /// ```
  public var count: Int {
    _registrar.access(self, keyPath: \._observedState)
    return _state.withLock { $0.records.count }
  }

  /// The store version the current records were read at (0 before the first state).
  ///
  /// ```swift
  /// if cows.version >= committed { … }     // the object has caught up with a write
  /// ```
  public var version: UInt64 {
    _registrar.access(self, keyPath: \._observedState)
    return _state.withLock { $0.version }
  }

  /// Whether the first state of the current query has arrived.
  ///
  /// ```swift
  /// if !cows.isLoaded { ProgressView() }
  /// ```
  public var isLoaded: Bool {
    _registrar.access(self, keyPath: \._observedState)
    return _state.withLock { $0.isLoaded }
  }

  /// The error that stopped the following, or nil: ``RequestSetError`` for a bad query or
  /// an unreadable store. A new ``query`` clears it.
  ///
  /// ```swift
  /// if let error = cows.error { print(error) }
  /// ```
  public var error: (any Error)? {
    _registrar.access(self, keyPath: \._observedState)
    return _state.withLock { $0.error }
  }

  /// The request set followed. Assigning one runs it and follows it instead: the object
  /// keeps its records until the new query's first state, then shows that state.
  ///
  /// ```swift
  /// cows.query = cows.query.filter(\.age > 3)
  /// ```
  public var query: RequestSet<Element> {
    get {
      _registrar.access(self, keyPath: \.query)
      return _state.withLock { $0.query }
    }
    set {
      _registrar.withMutation(of: self, keyPath: \.query) {
        _state.withLock { state in
          state.query = newValue
          state.generation += 1
          state.task?.cancel()
          state.task = nil
        }
      }
      _start()
    }
  }

  /// Stops following the store; the object keeps its last state. Assign ``query`` to
  /// follow again.
  ///
  /// ```swift
  /// cows.cancel()
  /// ```
  public func cancel() {
    _state.withLock { state in
      state.generation += 1
      state.task?.cancel()
      state.task = nil
    }
  }

  /// Starts the task that follows the current query.
  private func _start() {
    let actor = _actor
    _state.withLock { state in
      let query = state.query
      let generation = state.generation
      state.task = Task { [weak self] in
        do {
          var states = query.changes.makeAsyncIterator()
          while let snapshot = try await states.next() {
            guard let self else { return }
            await self._apply(generation, isolation: actor) { state in
              state.records = snapshot.records
              state.version = snapshot.version
              state.isLoaded = true
              state.error = nil
            }
          }
        } catch {
          guard let self, !(error is CancellationError) else { return }
          await self._apply(generation, isolation: actor) { $0.error = error }
        }
      }
    }
  }

  /// What observers of records, count, version, isLoaded and error track: one key path
  /// for the state they share, so a new state is one change, however many of them an
  /// observer reads.
  private var _observedState: Int { 0 }

  /// Applies a change of state on `actor` (here when nil), unless the query changed since
  /// it was read.
  private func _apply(
    _ generation: Int, isolation actor: (any Actor)?, _ change: @escaping @Sendable (inout State) -> Void
  ) async {
    let apply: @Sendable () -> Void = { [self] in
      guard _state.withLock({ $0.generation == generation }) else { return }
      _registrar.withMutation(of: self, keyPath: \._observedState) {
        _state.withLock { state in
          if state.generation == generation { change(&state) }
        }
      }
    }
    if let actor { await actor._runIsolated(apply) } else { apply() }
  }
}

extension Actor {
  /// Runs `body` on the actor.
  fileprivate func _runIsolated(_ body: @Sendable () -> Void) { body() }
}
