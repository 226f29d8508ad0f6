// name: entity_timeline
// description: The memories that mention an entity, oldest first, with the role it plays in each.
// param: name STRING
// param: owner STRING = ""
MATCH (m:Memory)-[r:MENTIONS]->(e:Entity)
WHERE r.gone IS NULL AND e.gone IS NULL AND m.status <> "forgotten"
  AND (e.name = lower($name) OR list_contains(e.aliases, lower($name)))
  AND ($owner = "" OR (e.owner = $owner AND m.owner = $owner))
RETURN m.created AS created, m.id AS id, r.role AS role, m.status AS status, m.text AS text
ORDER BY created, id
