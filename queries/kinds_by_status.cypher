// name: kinds_by_status
// description: How many memories of each kind are in each lifecycle status.
// param: owner STRING = ""
MATCH (m:Memory)
WHERE $owner = "" OR m.owner = $owner
RETURN m.kind AS kind, m.status AS status, count(*) AS memories
ORDER BY kind, status
