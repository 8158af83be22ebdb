-- GET /users/{id} over all 1,000 seeded rows. The requests are formatted once, in init,
-- so that wrk spends no Lua time per request beyond picking the next one.
local requests = {}
local n = 0

function init(args)
  for id = 1, 1000 do
    requests[id] = wrk.format("GET", "/users/" .. id)
  end
end

function request()
  n = n % 1000 + 1
  return requests[n]
end
