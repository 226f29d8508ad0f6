-- hot_set.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.access_count AS accesses, m.last_accessed AS last_accessed,
       m.kind AS kind, m.text AS text
  FROM memories m
 WHERE m.hot AND (%(owner)s = '' OR m.owner = %(owner)s)
 ORDER BY accesses DESC, id
