// name: recent_memories
// description: The newest memories, optionally of one owner.
// param: limit INT64 = 20
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.status <> "forgotten" AND ($owner = "" OR m.owner = $owner)
RETURN m.id AS id, m.created AS created, m.kind AS kind, m.status AS status, m.text AS text
ORDER BY created DESC, id
LIMIT $limit
