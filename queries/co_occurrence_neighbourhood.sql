-- co_occurrence_neighbourhood.cypher over PostgreSQL's tables: the same parameters and
-- rows. A breadth-first walk over CO_OCCURS edges (either direction, at most 3 hops)
-- through the owner's memories only.
WITH RECURSIVE walk (id, hops) AS (
  SELECT m.id, 0
    FROM memories m
   WHERE m.id = %(id)s AND (%(owner)s = '' OR m.owner = %(owner)s)
  UNION
  SELECT x.id, w.hops + 1
    FROM walk w
    JOIN LATERAL (SELECT r.dst AS other FROM edges r WHERE r.kind = 'co_occurs' AND r.src = w.id
                  UNION ALL
                  SELECT r.src FROM edges r WHERE r.kind = 'co_occurs' AND r.dst = w.id) step
      ON true
    JOIN memories x ON x.id = step.other
   WHERE w.hops < least(%(depth)s, 3) AND (%(owner)s = '' OR x.owner = %(owner)s)
)
SELECT n.id AS id, min(w.hops) AS hops, n.status AS status, n.text AS text
  FROM walk w JOIN memories n ON n.id = w.id
 WHERE w.hops >= 1 AND n.id <> %(id)s
 GROUP BY n.id, n.status, n.text
 ORDER BY hops, id
