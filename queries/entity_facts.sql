-- entity_facts.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT s.name AS subject, f.predicate AS predicate, o.name AS object,
       f.valid_from AS valid_from, f.valid_to AS valid_to, f.valid_to IS NULL AS current,
       f.confidence AS confidence, f.sources AS sources, f.id AS id
  FROM facts f
  JOIN entities s ON s.id = f.subject
  JOIN entities o ON o.id = f.object
 WHERE (%(owner)s = '' OR (f.owner = %(owner)s AND s.owner = %(owner)s AND o.owner = %(owner)s))
   AND (s.name = lower(%(name)s) OR lower(%(name)s) = ANY (s.aliases)
        OR o.name = lower(%(name)s) OR lower(%(name)s) = ANY (o.aliases))
 ORDER BY valid_from, id
