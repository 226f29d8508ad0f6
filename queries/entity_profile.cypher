// name: entity_profile
// description: An entity of the knowledge graph by name or alias (optionally one owner's): type, forms, how many memories mention it, first and last seen.
// param: name STRING
// param: owner STRING = ""
MATCH (e:Entity)
WHERE e.gone IS NULL AND (e.name = lower($name) OR list_contains(e.aliases, lower($name)))
  AND ($owner = "" OR e.owner = $owner)
OPTIONAL MATCH (m:Memory)-[r:MENTIONS]->(e)
WHERE r.gone IS NULL AND ($owner = "" OR m.owner = $owner)
RETURN e.id AS id, e.name AS name, e.type AS type, e.owner AS owner, e.aliases AS aliases,
       count(m) AS mentions, min(m.created) AS first_seen, max(m.created) AS last_seen
ORDER BY mentions DESC, id
