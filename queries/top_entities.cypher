// name: top_entities
// description: The entities (and codes, ids, wiki pages) mentioned by the most memories, without stop words (to, the, prof ...) and fragments (a phrase that begins or ends with a stop word or a hyphen, or holds an article or pronoun).
// param: limit INT64 = 20
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.status <> "forgotten" AND ($owner = "" OR m.owner = $owner)
UNWIND m.entities AS entity
WITH m, entity, string_split(entity, " ") AS words,
     ["a", "about", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at",
      "be", "been", "before", "but", "by", "can", "could", "did", "do", "does", "for", "from",
      "had", "has", "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into",
      "is", "it", "its", "just", "me", "more", "most", "my", "no", "not", "now", "of", "on",
      "once", "only", "or", "our", "out", "over", "she", "so", "some", "than", "that", "the",
      "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "up",
      "us", "was", "we", "were", "what", "when", "where", "which", "while", "who", "why",
      "will", "with", "without", "would", "you", "your"] AS stop
WHERE size(entity) >= 2 AND NOT regexp_matches(entity, "^[-./:]|[-./:]$")
  AND NOT list_contains(stop, words[1]) AND NOT list_contains(stop, words[size(words)])
  AND size(list_filter(words, w -> list_contains(["a", "an", "the", "i", "my", "we", "our",
                                                 "you", "your", "he", "she", "it", "they",
                                                 "to"], w))) = 0
  AND NOT list_contains(["dr", "mr", "mrs", "ms", "prof", "st"], entity)
RETURN entity, count(DISTINCT m.id) AS memories
ORDER BY memories DESC, entity
LIMIT $limit
