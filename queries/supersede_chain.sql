-- supersede_chain.cypher over PostgreSQL's tables: the same parameters and rows. A
-- breadth-first walk over SUPERSEDES edges (either direction, at most 20 hops) through
-- the owner's memories only.
WITH RECURSIVE walk (id, hops) AS (
  SELECT m.id, 0
    FROM memories m
   WHERE m.id = %(id)s AND (%(owner)s = '' OR m.owner = %(owner)s)
  UNION
  SELECT x.id, w.hops + 1
    FROM walk w
    JOIN LATERAL (SELECT r.dst AS other FROM edges r WHERE r.kind = 'supersedes' AND r.src = w.id
                  UNION ALL
                  SELECT r.src FROM edges r WHERE r.kind = 'supersedes' AND r.dst = w.id) step
      ON true
    JOIN memories x ON x.id = step.other
   WHERE w.hops < 20 AND (%(owner)s = '' OR x.owner = %(owner)s)
)
SELECT v.id AS id, v.created AS created, v.status AS status,
       cardinality(v.superseded_by) = 0 AS current, v.text AS text
  FROM memories v
 WHERE v.id IN (SELECT id FROM walk)
 ORDER BY created, id
