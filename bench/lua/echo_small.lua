-- POST /echo with a 5-character name.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"id":1,"name":"alice","age":30}'
