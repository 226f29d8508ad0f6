-- orphans.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.kind AS kind, m.created AS created, m.text AS text
  FROM memories m
 WHERE m.status = 'active' AND (%(owner)s = '' OR m.owner = %(owner)s)
   AND NOT EXISTS (SELECT 1 FROM edges r
                    WHERE r.kind IN ('references', 'co_occurs', 'supersedes') AND r.src = m.id)
   AND NOT EXISTS (SELECT 1 FROM edges r
                    WHERE r.kind IN ('references', 'co_occurs', 'supersedes') AND r.dst = m.id)
 ORDER BY created, id
