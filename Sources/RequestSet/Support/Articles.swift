/// `word` after its indefinite article, as messages name types and kinds: "an Int",
/// "a String", "an array", "an Animal", "a UUID", "a UInt8".
///
/// English picks the article by sound, so this follows the sound where spelling misleads:
/// a leading capital followed by another (an acronym such as `UUID` or `HTTPHeader`) is
/// read letter by letter, and a few common words are read as they sound (`a User`, `a
/// union`, `an hour`).
func _withArticle(_ word: String) -> String {
  guard let first = word.first else { return word }
  let anArticle: Bool
  if first.isUppercase, let second = word.dropFirst().first, second.isUppercase {
    // Spelled out: "an HTTP…", "an SQL…", "a UUID", "a URL", "a UInt8".
    anArticle = "AEFHILMNORSX".contains(first)
  } else {
    let lower = word.lowercased()
    if _silentH.contains(where: lower.hasPrefix) {
      anArticle = true
    } else if _voicedVowel.contains(where: lower.hasPrefix) {
      anArticle = false
    } else {
      anArticle = "aeiou".contains(lower.first ?? "x")
    }
  }
  return (anArticle ? "an " : "a ") + word
}

/// Beginnings of words whose h is silent: "an hour".
private let _silentH = ["hour", "honest", "honor", "honour", "heir"]
/// Beginnings of words whose vowel sounds as a consonant: "a User", "a one-off".
private let _voicedVowel = ["uni", "use", "usu", "uti", "ubi", "uri", "one", "once", "eu", "ewe"]

/// The name of `type` after its indefinite article: "an Animal".
func _withArticle(_ type: Any.Type) -> String { _withArticle(String(describing: type)) }
