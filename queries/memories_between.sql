-- memories_between.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.created AS created, m.kind AS kind, m.status AS status, m.text AS text
  FROM memories m
 WHERE m.created >= %(start)s AND m.created < %(end_)s
   AND (%(owner)s = '' OR m.owner = %(owner)s)
 ORDER BY created, id
