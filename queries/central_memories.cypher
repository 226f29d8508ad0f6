// name: central_memories
// description: The most central memories (PageRank stored by the last lifecycle run).
// param: limit INT64 = 20
MATCH (m:Memory)
WHERE m.centrality IS NOT NULL AND m.status <> "forgotten"
RETURN m.id AS id, m.centrality AS centrality, m.kind AS kind,
       coalesce(m.subject, substring(m.text, 1, 60)) AS label
ORDER BY centrality DESC, id
LIMIT $limit
