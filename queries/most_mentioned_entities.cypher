// name: most_mentioned_entities
// description: The entities most memories mention (a speaker's own label does not count), optionally of one type and owner.
// param: type STRING = ""
// param: owner STRING = ""
// param: limit INT64 = 20
MATCH (m:Memory)-[r:MENTIONS]->(e:Entity)
WHERE r.gone IS NULL AND e.gone IS NULL AND r.role <> "speaker"
  AND ($type = "" OR e.type = $type) AND ($owner = "" OR (e.owner = $owner AND m.owner = $owner))
RETURN e.name AS entity, e.type AS type, e.owner AS owner, count(DISTINCT m.id) AS mentions
ORDER BY mentions DESC, entity
LIMIT $limit
