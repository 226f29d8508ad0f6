-- kinds_by_status.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.kind AS kind, m.status AS status, count(*) AS memories
  FROM memories m
 WHERE %(owner)s = '' OR m.owner = %(owner)s
 GROUP BY m.kind, m.status
 ORDER BY m.kind COLLATE "C", m.status COLLATE "C"
