import Testing

/// Input a program can receive, run in a child process so that a crash fails the test
/// instead of ending the test run. Each area adds its scenarios to `Tests/AdversaryWorker`.
@Suite(.ownThreads) struct AdversaryTests {
  @Test func theWorkerRunsAndReportsItsScenario() throws {
    let result = try AdversaryChild.run("ping")
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines == ["pong", "done"])
  }

  @Test func anUnknownScenarioIsAUsageError() throws {
    let result = try AdversaryChild.run("no-such-scenario")
    #expect(result.exitStatus == 2)
    #expect(!result.exitedNormally)
  }
}
