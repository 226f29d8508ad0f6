// name: co_mentioned
// description: The entities mentioned in the same memories as an entity, most often together first.
// param: name STRING
// param: owner STRING = ""
// param: limit INT64 = 10
MATCH (m:Memory)-[r1:MENTIONS]->(e:Entity), (m)-[r2:MENTIONS]->(o:Entity)
WHERE r1.gone IS NULL AND r2.gone IS NULL AND o.id <> e.id AND o.gone IS NULL
  AND (e.name = lower($name) OR list_contains(e.aliases, lower($name)))
  AND ($owner = "" OR (e.owner = $owner AND m.owner = $owner AND o.owner = $owner))
RETURN o.name AS entity, o.type AS type, count(DISTINCT m.id) AS together
ORDER BY together DESC, entity
LIMIT $limit
