// name: top_entities
// description: The entities and key phrases mentioned by the most memories.
// param: limit INT64 = 20
MATCH (m:Memory)
WHERE m.status <> "forgotten"
UNWIND m.entities AS entity
RETURN entity, count(DISTINCT m.id) AS memories
ORDER BY memories DESC, entity
LIMIT $limit
