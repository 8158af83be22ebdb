-- POST /echo with a 4,096-character name (a body of about 4 KiB).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"id":1,"name":"' .. string.rep("a", 4096) .. '","age":30}'
