-- The mixed case (issue 39): ids 1 to 1,000 in turn, every tenth one a POST /users/{id}<path>
-- with an empty body, the other nine GET /users/{id}; <path> is the path of the URL wrk is
-- given (/touch, a transaction of three statements, or /touch/plain, the same three without
-- one). The same cycle of requests every run; formatted once, in init, as users.lua.
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
