import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetPostgres

// Issue 36, PostgreSQL: issue 23's owner.city count through a graph of PostgresStores.
//
//   swift run -c release --package-path Benchmarks Ratios 1000000 issue36pg
//
// N / 10 animals and N / 100 owners (1 in 10 in Oslo, 1 in 20 animals with no owner), an
// index on the animals' `ownerID`, on a private server (or REQUESTSET_POSTGRES_URL's):
// the count with both stores in one database (one statement, the owners' condition a
// subquery), with the owners in another database (the semi-join: their ids read, then
// bound), and the same count in direct SQL through libpq, `IN` and `EXISTS`, on plain
// tables of integer and text columns with the same index.

func issue36PostgresTables(_ n: Int) throws {
  let animalCount = max(1_000, n / 10)
  let ownerCount = max(100, n / 100)
  let owners = makeBOwners(ownerCount, seed: 33)
  let animals = makeBAnimals(animalCount, owners: ownerCount, seed: 34)
  let expected = animals.filter { a in a.ownerID.map { owners[$0].city == "Oslo" } ?? false }.count
  let size = "\(grouped(animalCount)) animals, \(grouped(ownerCount)) owners"

  progress("Issue 36, PostgreSQL: a private server…")
  let server = try PrivatePostgres()
  defer { server.stop() }
  let pq = try PlainLibPQ(url: server.url)
  try pq.exec("CREATE DATABASE issue36_other")
  // The same server, the last path component (the database) replaced.
  guard let slash = server.url.range(of: "/", options: .backwards) else {
    throw RelationBenchFailure("the server's URL \(server.url) names no database")
  }
  let otherURL = String(server.url[..<slash.upperBound]) + "issue36_other"

  progress("  issue 36: stores (\(size))…")
  let ownerStore = try PostgresStore<BOwner>(url: server.url, table: "owners")
  let animalStore = try PostgresStore<BAnimal>(url: server.url, table: "animals")
  let visitStore = try PostgresStore<BVisit>(url: server.url, table: "visits")
  let farOwners = try PostgresStore<BOwner>(url: otherURL, table: "owners")
  defer {
    ownerStore.close()
    farOwners.close()
    animalStore.close()
    visitStore.close()
  }
  try ownerStore.insert(contentsOf: owners)
  try farOwners.insert(contentsOf: owners)
  try animalStore.insert(contentsOf: animals)
  try animalStore.createIndex("ownerID")

  progress("  issue 36: plain tables…")
  for statement in [
    "CREATE TABLE plain_owners (id integer PRIMARY KEY, name text NOT NULL, city text NOT NULL)",
    """
    CREATE TABLE plain_animals (id integer PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
    ownerID integer REFERENCES plain_owners(id))
    """,
    "CREATE INDEX plain_animals_ownerID ON plain_animals(ownerID)",
    "INSERT INTO plain_owners SELECT (body->>'id')::integer, body->>'name', body->>'city' FROM owners",
    """
    INSERT INTO plain_animals SELECT (body->>'id')::integer, body->>'name', (body->>'age')::integer, \
    (body->>'ownerID')::integer FROM animals
    """,
    "ANALYZE",
  ] {
    try pq.exec(statement)
  }

  let oneDatabase = try RecordGraph(ownerStore, animalStore, visitStore)
  let twoDatabases = try RecordGraph(farOwners, animalStore, visitStore)
  let inSQL =
    "SELECT count(*) FROM plain_animals WHERE ownerID IN (SELECT id FROM plain_owners WHERE city = 'Oslo')"
  let existsSQL = """
    SELECT count(*) FROM plain_animals a WHERE EXISTS (SELECT 1 FROM plain_owners o WHERE o.id = a.ownerID \
    AND o.city = 'Oslo')
    """
  for (label, count) in [
    ("one database", oneDatabase.records(BAnimal.self).filter("owner.city", value: "Oslo").count),
    ("two databases", twoDatabases.records(BAnimal.self).filter("owner.city", value: "Oslo").count),
    ("IN", try pq.integer(inSQL)), ("EXISTS", try pq.integer(existsSQL)),
  ] where count != expected {
    throw RelationBenchFailure("\(label) counts \(count) animals in Oslo, the data \(expected)")
  }

  progress("  issue 36: the counts…")
  let one = oneDatabase.records(BAnimal.self)
  let two = twoDatabases.records(BAnimal.self)
  let oneTime = median(runs: 9) { keep(one.filter("owner.city", value: "Oslo").count) }
  let typedTime = median(runs: 9) { keep(one.filter(BAnimal.owner.city == "Oslo").count) }
  let twoTime = median(runs: 9) { keep(two.filter("owner.city", value: "Oslo").count) }
  let inTime = try median(runs: 9) { keep(try pq.integer(inSQL)) }
  let existsTime = try median(runs: 9) { keep(try pq.integer(existsSQL)) }
  printTable(
    "Issue 36: the owner.city count through PostgresStores (\(size)) → \(grouped(expected))",
    [
      issue13Row(
        "`filter(\"owner.city\", value: \"Oslo\").count`, one database: one statement", oneTime,
        "libpq: `\(inSQL)`, plain tables, index on ownerID", inTime, limit: 1.2, target: "≤ 1.2×"),
      issue13Row(
        "typed `filter(BAnimal.owner.city == \"Oslo\").count`, one database", typedTime,
        "the same direct SQL",
        inTime, limit: nil, target: "—"),
      issue13Row(
        "the same count, owners in another database: semi-join, 2 statements", twoTime, "the same direct SQL",
        inTime, limit: nil, target: "—"),
      issue13Row(
        "(for reference) the one-statement count", oneTime, "libpq: the same count with `EXISTS`", existsTime,
        limit: nil, target: "—"),
    ])
  print("\n`explain()` of the one-database count:\n")
  print(one.filter("owner.city", value: "Oslo").explain())
}
