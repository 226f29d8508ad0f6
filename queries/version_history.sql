-- version_history.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT v.seq AS seq, v.at AS at, v.change_type AS change_type, v.status AS status,
       v.importance AS importance, v.redacted AS redacted, v.text AS text
  FROM memories m
  JOIN versions v ON v.memory_id = m.id
 WHERE m.id = %(id)s AND (%(owner)s = '' OR m.owner = %(owner)s)
 ORDER BY seq
