// name: session_timeline
// description: The memories of one session (conversation), in time order.
// param: session STRING
// param: owner STRING = ""
MATCH (m:Memory)
WHERE m.session = $session AND ($owner = "" OR m.owner = $owner)
RETURN m.id AS id, m.created AS created, m.status AS status, m.text AS text
ORDER BY created, id
