// The Node `http` peer: the four workload routes plus /health, answering the same JSON
// shapes and status codes as examples/workload/workload.svc, with the same strict checks
// (exact fields, JSON types, i32 range for age) and the same seeded SQLite table
// (better-sqlite3, synchronous: a point lookup in memory is microseconds).
// Port from SVC_PORT (default 8080), database from SVC_DB (default :memory:). A PostgreSQL
// URL in SVC_DB uses the `pg` package instead: a Pool of SVC_DB_POOL_SIZE (default 10, as
// svc's) and a named prepared statement for the lookup, as svc's asyncpg prepares it.
// NODE_WORKERS=N (default 1) runs N `cluster` workers on the one port, as SVC_WORKERS does for
// svc: the primary seeds a database file once, then each worker opens it.
'use strict';
const cluster = require('cluster');
const http = require('http');
const Database = require('better-sqlite3');

const DB_URL = process.env.SVC_DB || ':memory:';
const ON_POSTGRES = /^postgres(ql)?:\/\//.test(DB_URL);

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;
const BODY_LIMIT = 1 << 20;

function openDb(path) {
  const db = new Database(path);
  if (cluster.isWorker && path !== ':memory:') {  // seeded by the primary
    return db.prepare('SELECT id, name, age FROM users WHERE id = ?');
  }
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL)');
  db.exec('DELETE FROM users');
  const insert = db.prepare('INSERT INTO users (id, name, age) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 1000; i++) insert.run(i, `user${i}`, 18 + (i % 60));
  })();
  return db.prepare('SELECT id, name, age FROM users WHERE id = ?');
}

// PostgreSQL: the same table and rows as workload.svc seeds. BIGINT arrives as text by
// default; ids are within 2^53, so they are read as numbers, as svc reads them as integers.
async function openPostgres(url) {
  const pg = require('pg');
  pg.types.setTypeParser(20, (text) => Number(text));
  const pool = new pg.Pool({ connectionString: url, max: Number(process.env.SVC_DB_POOL_SIZE || 10) });
  await pool.query('CREATE TABLE IF NOT EXISTS users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL)');
  await pool.query("INSERT INTO users (id, name, age) SELECT n, 'user' || n, 18 + n % 60 " +
                   'FROM generate_series(1, 1000) AS n ON CONFLICT (id) DO NOTHING');
  return pool;
}

const lookup = ON_POSTGRES ? null : openDb(DB_URL);
let pgPool = null;

function send(res, status, contentType, body) {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function json(res, status, value) {
  send(res, status, 'application/json', JSON.stringify(value));
}

function fail(res, status, reason, headers) {
  if (headers) for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  json(res, status, { error: reason });
}

// The strict User check: an object with exactly id (integer), name (string), age (i32).
function checkUser(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'expected an object';
  const keys = Object.keys(v);
  if (keys.length !== 3 || !('id' in v) || !('name' in v) || !('age' in v)) return 'expected exactly id, name, age';
  if (!Number.isSafeInteger(v.id)) return 'id must be an integer';
  if (typeof v.name !== 'string') return 'name must be a string';
  if (!Number.isInteger(v.age) || v.age < I32_MIN || v.age > I32_MAX) return 'age must be an i32';
  return null;
}

function echo(req, res) {
  const ct = req.headers['content-type'];
  if (ct !== undefined && ct.split(';')[0].trim().toLowerCase() !== 'application/json') {
    req.resume();
    return fail(res, 415, 'content type must be application/json');
  }
  const chunks = [];
  let size = 0;
  req.on('data', (c) => { size += c.length; chunks.push(c); });
  req.on('end', () => {
    if (size > BODY_LIMIT) return fail(res, 413, 'request body too large');
    let value;
    try {
      value = JSON.parse(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    } catch (e) {
      return fail(res, 400, 'malformed JSON');
    }
    const problem = checkUser(value);
    if (problem) return fail(res, 400, problem);
    json(res, 200, { id: value.id, name: value.name, age: value.age });
  });
}

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

// Parses a decimal i64; a Number when it is exact, a BigInt beyond 2^53, null when invalid.
function parseI64(raw) {
  if (raw === null || !/^[+-]?\d+$/.test(raw)) return null;
  if (raw.length < 16) return Number(raw);
  const big = BigInt(raw);
  return big < I64_MIN || big > I64_MAX ? null : big;
}

function query(res, search) {
  const q = new URLSearchParams(search);
  const limit = parseI64(q.get('limit'));
  if (limit === null) return fail(res, 400, "bad query parameter 'limit'");
  const name = q.get('name');
  if (name === null) return fail(res, 400, "missing query parameter 'name'");
  if (typeof limit === 'bigint') {  // JSON.stringify cannot write a BigInt
    return send(res, 200, 'application/json', `{"id":${limit},"name":${JSON.stringify(name)},"age":30}`);
  }
  json(res, 200, { id: limit, name, age: 30 });
}

function userById(res, raw) {
  const id = parseI64(raw);
  if (id === null) return fail(res, 400, "bad path parameter 'id'");
  if (pgPool !== null) return userByIdPostgres(res, id);
  const row = lookup.get(id);
  if (row === undefined) return fail(res, 404, 'not found');
  json(res, 200, { id: row.id, name: row.name, age: row.age });
}

function userByIdPostgres(res, id) {
  const query = { name: 'user_by_id', text: 'SELECT id, name, age FROM users WHERE id = $1', values: [String(id)] };
  pgPool.query(query).then((result) => {
    const row = result.rows[0];
    if (row === undefined) return fail(res, 404, 'not found');
    json(res, 200, { id: row.id, name: row.name, age: row.age });
  }, () => fail(res, 503, 'the database is unavailable'));
}

const GET_ROUTES = new Set(['/health', '/small', '/query']);

function handle(req, res) {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const isGet = req.method === 'GET' || req.method === 'HEAD';
  if (path === '/echo') {
    if (req.method !== 'POST') return fail(res, 405, 'method not allowed', { Allow: 'POST' });
    return echo(req, res);
  }
  const isUser = path.startsWith('/users/') && path.indexOf('/', 7) < 0;
  if (!GET_ROUTES.has(path) && !isUser) return fail(res, 404, 'not found');
  if (!isGet) return fail(res, 405, 'method not allowed', { Allow: 'GET, HEAD' });
  if (path === '/health') return send(res, 200, 'text/plain; charset=utf-8', 'ok');
  if (path === '/small') return json(res, 200, { id: 1, name: 'ada', age: 36 });
  if (path === '/query') return query(res, q < 0 ? '' : url.slice(q + 1));
  return userById(res, path.slice(7));
}

const port = Number(process.env.SVC_PORT || 8080);
const workers = Number(process.env.NODE_WORKERS || 1);
if (workers > 1 && cluster.isPrimary) {
  let stopping = false;
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', () => { if (!stopping) cluster.fork(); });
  process.on('SIGTERM', () => { stopping = true; for (const w of Object.values(cluster.workers)) w.kill(); });
} else {
  const listen = () => http.createServer({ keepAliveTimeout: 10000 }, handle).listen({ port, host: '127.0.0.1', backlog: 4096 }, () => {
    if (!cluster.isWorker) console.log(`listening on http://127.0.0.1:${port}`);
  });
  if (ON_POSTGRES) {
    openPostgres(DB_URL).then((pool) => { pgPool = pool; listen(); },
                              (e) => { console.error(`cannot open ${DB_URL}: ${e.message}`); process.exit(1); });
  } else {
    listen();
  }
}
