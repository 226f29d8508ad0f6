-- relations_between.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT s.name AS subject, f.predicate AS predicate, o.name AS object,
       f.valid_from AS valid_from, f.valid_to AS valid_to, f.valid_to IS NULL AS current,
       f.sources AS sources
  FROM facts f
  JOIN entities s ON s.id = f.subject
  JOIN entities o ON o.id = f.object
 WHERE (%(owner)s = '' OR (f.owner = %(owner)s AND s.owner = %(owner)s AND o.owner = %(owner)s))
   AND (((s.name = lower(%(a)s) OR lower(%(a)s) = ANY (s.aliases))
         AND (o.name = lower(%(b)s) OR lower(%(b)s) = ANY (o.aliases)))
     OR ((s.name = lower(%(b)s) OR lower(%(b)s) = ANY (s.aliases))
         AND (o.name = lower(%(a)s) OR lower(%(a)s) = ANY (o.aliases))))
 ORDER BY valid_from, f.id
