// name: orphans
// description: Active memories with no edge at all (nothing references, co-occurs with or supersedes them).
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.status = "active" AND ($owner = "" OR m.owner = $owner)
  AND NOT EXISTS { MATCH (m)-[r:REFERENCES|CO_OCCURS|SUPERSEDES]-(:Memory) WHERE r.gone IS NULL }
RETURN m.id AS id, m.kind AS kind, m.created AS created, m.text AS text
ORDER BY created, id
