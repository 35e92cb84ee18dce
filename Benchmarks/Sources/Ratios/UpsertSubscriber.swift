import RequestSet

/// The record `Ratios upsert` writes on both sides (UpsertRatios.swift makes it a GRDB
/// record too; this file imports RequestSet alone, where `Record` names one protocol).
struct UpsertSubscriber: Record {
  var id: Int
  var email: String
  var name: String
  var visits: Int
}
