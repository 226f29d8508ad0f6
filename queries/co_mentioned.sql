-- co_mentioned.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT o.name AS entity, o.type AS type, count(DISTINCT m.id) AS together
  FROM entities e
  JOIN mentions r1 ON r1.entity_id = e.id
  JOIN memories m ON m.id = r1.memory_id
  JOIN mentions r2 ON r2.memory_id = m.id
  JOIN entities o ON o.id = r2.entity_id
 WHERE o.id <> e.id
   AND (e.name = lower(%(name)s) OR lower(%(name)s) = ANY (e.aliases))
   AND (%(owner)s = '' OR (e.owner = %(owner)s AND m.owner = %(owner)s AND o.owner = %(owner)s))
 GROUP BY o.name, o.type
 ORDER BY together DESC, o.name COLLATE "C", o.type COLLATE "C"
 LIMIT %(limit)s
