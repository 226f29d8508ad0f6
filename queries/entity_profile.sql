-- entity_profile.cypher over PostgreSQL's tables: the same parameters and rows.
SELECT e.id AS id, e.name AS name, e.type AS type, e.owner AS owner, e.aliases AS aliases,
       count(m.id) AS mentions, min(m.created) AS first_seen, max(m.created) AS last_seen
  FROM entities e
  LEFT JOIN (mentions r JOIN memories m
               ON m.id = r.memory_id AND (%(owner)s = '' OR m.owner = %(owner)s))
    ON r.entity_id = e.id
 WHERE (e.name = lower(%(name)s) OR lower(%(name)s) = ANY (e.aliases))
   AND (%(owner)s = '' OR e.owner = %(owner)s)
 GROUP BY e.id
 ORDER BY mentions DESC, id
