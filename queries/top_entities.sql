-- top_entities.cypher over PostgreSQL's tables: the same parameters, word lists and rows.
SELECT entity, count(DISTINCT m.id) AS memories
  FROM memories m
  CROSS JOIN LATERAL unnest(m.entities) AS entity
  CROSS JOIN LATERAL string_to_array(entity, ' ') AS words
  CROSS JOIN (SELECT ARRAY[
      'a', 'about', 'after', 'again', 'all', 'also', 'an', 'and', 'any', 'are', 'as', 'at',
      'be', 'been', 'before', 'but', 'by', 'can', 'could', 'did', 'do', 'does', 'for', 'from',
      'had', 'has', 'have', 'he', 'her', 'here', 'him', 'his', 'how', 'i', 'if', 'in', 'into',
      'is', 'it', 'its', 'just', 'me', 'more', 'most', 'my', 'no', 'not', 'now', 'of', 'on',
      'once', 'only', 'or', 'our', 'out', 'over', 'she', 'so', 'some', 'than', 'that', 'the',
      'their', 'them', 'then', 'there', 'these', 'they', 'this', 'those', 'to', 'too', 'up',
      'us', 'was', 'we', 'were', 'what', 'when', 'where', 'which', 'while', 'who', 'why',
      'will', 'with', 'without', 'would', 'you', 'your'] AS stop) AS words_of
 WHERE m.status <> 'forgotten' AND (%(owner)s = '' OR m.owner = %(owner)s)
   AND char_length(entity) >= 2 AND entity !~ '^[-./:]|[-./:]$'
   AND NOT words[1] = ANY (stop) AND NOT words[cardinality(words)] = ANY (stop)
   AND NOT words && ARRAY['a', 'an', 'the', 'i', 'my', 'we', 'our',
                          'you', 'your', 'he', 'she', 'it', 'they',
                          'to']
   AND NOT entity = ANY (ARRAY['dr', 'mr', 'mrs', 'ms', 'prof', 'st'])
 GROUP BY entity
 ORDER BY memories DESC, entity COLLATE "C"
 LIMIT %(limit)s
