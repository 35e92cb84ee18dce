import Foundation
import RequestSet
import RequestSetSQLite
import Testing

/// A SQLiteStore's text index beside other writers of its file: another program's write to
/// the table is refused with an error that names the missing function, and what a store's
/// connections keep of the table between reads (its text index, whether every row is
/// plain) follows changes made by another store or another program.
@Suite(.ownThreads) struct SQLiteTextIndexOutsideTests {
  /// The statement's test when it reads the text index.
  static let match =
    #"seq IN (SELECT rowid FROM "Article_requestset_text" WHERE "Article_requestset_text" MATCH ?)"#

  static func store(_ path: String) throws -> SQLiteStore<Article> {
    let store = try SQLiteStore<Article>(path: path)
    var docs = TextSearchTests.articles(count: 60, seed: 3821)
    docs[7].title = "Zebra crossing"
    try store.insert(contentsOf: docs)
    try store.createTextIndex("title", "body")
    return store
  }

  @Test func anotherProgramsWriteToAnIndexedTableIsRefused() throws {
    let path = TemporaryLogDirectory.freshPath("articles.sqlite")
    let store = try Self.store(path)
    defer { store.close() }
    #expect(try RequestSet(store).filter(matching: "zebra").ids() == [8])
    let body = #"{"id":999,"title":"zebra","body":"","labels":[],"rank":0}"#
    let out = try sqliteShell(path, "INSERT INTO \"Article\"(id, body, plain) VALUES ('999', '\(body)', 1)")
    #expect(out.contains { $0.contains("no such function: rs_words") }, "\(out)")
    // Nothing was written: the table and its index still agree.
    #expect(try RequestSet(store).filter(matching: "zebra").ids() == [8])
    #expect(try RequestSet(store).fetchCount() == 60)
  }

  @Test func readersFollowATextIndexDroppedOrMadeElsewhere() throws {
    let path = TemporaryLogDirectory.freshPath("articles.sqlite")
    let store = try Self.store(path)
    defer { store.close() }
    // A new set for each read: a set keeps the result it read first.
    func search() -> RequestSet<Article> {
      RequestSet(store).filter(matching: "zebra", in: ["title", "body"])
    }
    // Read once, so a pooled connection keeps the table's checks.
    #expect(try search().ids() == [8])
    #expect(search().explain().contains(Self.match), "\(search().explain())")

    // Another program drops the index: the next read must not look for its table.
    let name = "Article_requestset_text"
    let out = try sqliteShell(
      path,
      "DROP TRIGGER \"\(name)_insert\"; DROP TRIGGER \"\(name)_delete\"; DROP TRIGGER \"\(name)_update\"; "
        + "DROP TABLE \"\(name)\";")
    #expect(out.isEmpty, "\(out)")
    #expect(try search().ids() == [8])
    #expect(search().explain().contains("WHERE rs_filter(?, body)"), "\(search().explain())")
    #expect(try store.textIndexKeys() == nil)

    // Another store on the file creates it again: this store's readers use it.
    let other = try SQLiteStore<Article>(path: path)
    try other.createTextIndex("title", "body")
    other.close()
    #expect(try search().ids() == [8])
    #expect(search().explain().contains(Self.match), "\(search().explain())")
    try store.save(Article(id: 3, title: "zebra", body: "", labels: [], rank: 0))
    let found = try search().ids()
    #expect(found.sorted() == [3, 8], "\(found)")
  }
}
