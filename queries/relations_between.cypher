// name: relations_between
// description: The facts that relate two entities (either direction), with their validity.
// param: a STRING
// param: b STRING
// param: owner STRING = ""
// json: sources
MATCH (s:Entity)-[f:FACT]->(o:Entity)
WHERE f.gone IS NULL
  AND ($owner = "" OR (f.owner = $owner AND s.owner = $owner AND o.owner = $owner))
  AND (((s.name = lower($a) OR list_contains(s.aliases, lower($a)))
        AND (o.name = lower($b) OR list_contains(o.aliases, lower($b))))
    OR ((s.name = lower($b) OR list_contains(s.aliases, lower($b)))
        AND (o.name = lower($a) OR list_contains(o.aliases, lower($a)))))
RETURN s.name AS subject, f.predicate AS predicate, o.name AS object,
       f.valid_from AS valid_from, f.valid_to AS valid_to, f.valid_to IS NULL AS current,
       f.sources AS sources
ORDER BY valid_from, f.id
