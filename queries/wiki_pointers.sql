-- wiki_pointers.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT w.subject AS page, count(*) AS pointers, array_agg(a.id ORDER BY a.id) AS from_memories
  FROM edges r
  JOIN memories a ON a.id = r.src
  JOIN memories w ON w.id = r.dst
 WHERE r.kind = 'references' AND r.source = 'wiki'
   AND (%(owner)s = '' OR (a.owner = %(owner)s AND w.owner = %(owner)s))
 GROUP BY w.subject
 ORDER BY pointers DESC, w.subject COLLATE "C"
