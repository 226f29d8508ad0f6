// name: strongest_co_occurrences
// description: The strongest CO_OCCURS edges (pairs recalled or used together most).
// param: limit INT64 = 20
// param: owner STRING = ""
MATCH (x:Memory)-[r:CO_OCCURS]->(y:Memory)
WHERE r.gone IS NULL AND ($owner = "" OR (x.owner = $owner AND y.owner = $owner))
RETURN x.id AS a, y.id AS b, r.weight AS weight, r.count AS count, r.source AS source
ORDER BY weight DESC, a, b
LIMIT $limit
