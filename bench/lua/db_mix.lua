-- bench/db_load.py's mixed load: over all 1,000 seeded rows, 1 request in 10 is
-- POST /users/{id}<path> (a transaction of three statements, or its plain neighbour: the
-- URL's path, /trio or /trio/plain), the other 9 GET /users/{id}. Formatted once, in init.
local requests = {}
local n = 0

function init(args)
  for id = 1, 1000 do
    if id % 10 == 0 then
      requests[id] = wrk.format("POST", "/users/" .. id .. wrk.path)
    else
      requests[id] = wrk.format("GET", "/users/" .. id)
    end
  end
end

function request()
  n = n % 1000 + 1
  return requests[n]
end
