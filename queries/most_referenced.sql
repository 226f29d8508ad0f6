-- most_referenced.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT m.id AS id, m.kind AS kind, m.status AS status, count(DISTINCT a.id) AS referenced_by,
       coalesce(m.subject, substr(m.text, 1, 60)) AS label
  FROM edges r
  JOIN memories a ON a.id = r.src
  JOIN memories m ON m.id = r.dst
 WHERE r.kind = 'references' AND a.id <> m.id AND (%(kind)s = '' OR m.kind = %(kind)s)
   AND m.status <> 'forgotten' AND (%(include_tombstoned)s OR m.status <> 'tombstoned')
   AND (%(owner)s = '' OR (a.owner = %(owner)s AND m.owner = %(owner)s))
 GROUP BY m.id
 ORDER BY referenced_by DESC, id
 LIMIT %(limit)s
