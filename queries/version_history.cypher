// name: version_history
// description: The append-only version rows of one memory.
// param: id STRING
// param: owner STRING = ""
MATCH (m:Memory {id: $id})-[:HAS_VERSION]->(v:Version)
WHERE $owner = "" OR m.owner = $owner
RETURN v.seq AS seq, v.at AS at, v.change_type AS change_type, v.status AS status,
       v.importance AS importance, v.redacted AS redacted, v.text AS text
ORDER BY seq
