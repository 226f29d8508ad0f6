// name: memories_between
// description: Memories created in a time window [start, end) (ISO timestamps), optionally of one owner.
// param: start TIMESTAMP
// param: end TIMESTAMP
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.created >= $start AND m.created < $end_ AND ($owner = "" OR m.owner = $owner)
RETURN m.id AS id, m.created AS created, m.kind AS kind, m.status AS status, m.text AS text
ORDER BY created, id
