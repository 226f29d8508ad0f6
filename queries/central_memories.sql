-- central_memories.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.centrality AS centrality, m.kind AS kind, m.status AS status,
       coalesce(m.subject, substr(m.text, 1, 60)) AS label
  FROM memories m
 WHERE m.centrality IS NOT NULL AND m.status <> 'forgotten'
   AND (%(include_tombstoned)s OR m.status <> 'tombstoned')
   AND (%(owner)s = '' OR m.owner = %(owner)s)
 ORDER BY centrality DESC, id
 LIMIT %(limit)s
