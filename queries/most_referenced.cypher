// name: most_referenced
// description: The memories the most other memories point to (REFERENCES), optionally of one kind; tombstoned ones only with `include_tombstoned`.
// param: limit INT64 = 10
// param: kind STRING = ""
// param: include_tombstoned BOOLEAN = false
// param: owner STRING = ""
MATCH (a:Memory)-[r:REFERENCES]->(m:Memory)
WHERE r.gone IS NULL AND a.id <> m.id AND ($kind = "" OR m.kind = $kind)
  AND m.status <> "forgotten" AND ($include_tombstoned OR m.status <> "tombstoned")
  AND ($owner = "" OR (a.owner = $owner AND m.owner = $owner))
RETURN m.id AS id, m.kind AS kind, m.status AS status, count(DISTINCT a.id) AS referenced_by,
       coalesce(m.subject, substring(m.text, 1, 60)) AS label
ORDER BY referenced_by DESC, id
LIMIT $limit
