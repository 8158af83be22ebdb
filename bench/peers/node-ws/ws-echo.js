// The WebSocket echo peer of bench/live.py, on the `ws` package: each text message's JSON
// decoded and sent back encoded (the work bench/live_ws.svc's route does), binary as it came.
const http = require("http");
const { WebSocketServer } = require("ws");

const server = http.createServer((req, res) => {
  res.writeHead(req.url === "/health" ? 200 : 404, { "Content-Type": "text/plain" });
  res.end(req.url === "/health" ? "ok" : "not found");
});
const wss = new WebSocketServer({ server, path: "/echo", maxPayload: 1 << 20 });
wss.on("connection", (ws) => {
  ws.on("message", (data, isBinary) =>
    ws.send(isBinary ? data : JSON.stringify(JSON.parse(data)), { binary: isBinary }));
});
server.listen(Number(process.env.SVC_PORT || 8080), "127.0.0.1");
