// name: entity_facts
// description: The facts about an entity (as subject or object), with their validity in time: current ones have no valid_to.
// param: name STRING
// param: owner STRING = ""
// json: sources
MATCH (s:Entity)-[f:FACT]->(o:Entity)
WHERE f.gone IS NULL
  AND ($owner = "" OR (f.owner = $owner AND s.owner = $owner AND o.owner = $owner))
  AND (s.name = lower($name) OR list_contains(s.aliases, lower($name))
       OR o.name = lower($name) OR list_contains(o.aliases, lower($name)))
RETURN s.name AS subject, f.predicate AS predicate, o.name AS object,
       f.valid_from AS valid_from, f.valid_to AS valid_to, f.valid_to IS NULL AS current,
       f.confidence AS confidence, f.sources AS sources, f.id AS id
ORDER BY valid_from, id
