-- POST /users/{id}<path> over all 1,000 seeded rows, with an empty body; <path> is the path of
-- the URL wrk is given (/birthday or /birthday/plain). Formatted once, in init, as users.lua.
local requests = {}
local n = 0

function init(args)
  for id = 1, 1000 do
    requests[id] = wrk.format("POST", "/users/" .. id .. wrk.path)
  end
end

function request()
  n = n % 1000 + 1
  return requests[n]
end
