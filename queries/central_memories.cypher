// name: central_memories
// description: The most central memories (PageRank stored by the last lifecycle run), tombstoned ones only with `include_tombstoned`.
// param: limit INT64 = 20
// param: include_tombstoned BOOLEAN = false
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.centrality IS NOT NULL AND m.status <> "forgotten"
  AND ($include_tombstoned OR m.status <> "tombstoned") AND ($owner = "" OR m.owner = $owner)
RETURN m.id AS id, m.centrality AS centrality, m.kind AS kind, m.status AS status,
       coalesce(m.subject, substring(m.text, 1, 60)) AS label
ORDER BY centrality DESC, id
LIMIT $limit
