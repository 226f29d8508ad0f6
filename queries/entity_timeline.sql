-- entity_timeline.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.created AS created, m.id AS id, r.role AS role, m.status AS status, m.text AS text
  FROM entities e
  JOIN mentions r ON r.entity_id = e.id
  JOIN memories m ON m.id = r.memory_id
 WHERE m.status <> 'forgotten'
   AND (e.name = lower(%(name)s) OR lower(%(name)s) = ANY (e.aliases))
   AND (%(owner)s = '' OR (e.owner = %(owner)s AND m.owner = %(owner)s))
 ORDER BY created, id, r.role COLLATE "C"
