-- session_timeline.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.created AS created, m.status AS status, m.text AS text
  FROM memories m
 WHERE m.session = %(session)s AND (%(owner)s = '' OR m.owner = %(owner)s)
 ORDER BY created, id
