-- strongest_co_occurrences.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT r.src AS a, r.dst AS b, r.weight AS weight, r.count AS count, r.source AS source
  FROM edges r
  JOIN memories x ON x.id = r.src
  JOIN memories y ON y.id = r.dst
 WHERE r.kind = 'co_occurs' AND (%(owner)s = '' OR (x.owner = %(owner)s AND y.owner = %(owner)s))
 ORDER BY weight DESC, a, b
 LIMIT %(limit)s
