-- most_mentioned_entities.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT e.name AS entity, e.type AS type, e.owner AS owner, count(DISTINCT m.id) AS mentions
  FROM mentions r
  JOIN entities e ON e.id = r.entity_id
  JOIN memories m ON m.id = r.memory_id
 WHERE r.role <> 'speaker' AND (%(type)s = '' OR e.type = %(type)s)
   AND (%(owner)s = '' OR (e.owner = %(owner)s AND m.owner = %(owner)s))
 GROUP BY e.name, e.type, e.owner
 ORDER BY mentions DESC, e.name COLLATE "C", e.type COLLATE "C", e.owner COLLATE "C"
 LIMIT %(limit)s
