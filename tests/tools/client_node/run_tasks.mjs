// Drives the task manager through its generated JavaScript client (svcc client --lang js):
// node run_tasks.mjs CLIENT.mjs BASE_URL. Prints one JSON line of what it saw; the Python test
// (tests/tools/test_client_node.py) checks it. A failed expectation exits 1 with the reason.
import assert from "node:assert/strict";

const [clientPath, baseUrl] = process.argv.slice(2);
const { createClient } = await import(clientPath);
const api = createClient(baseUrl);

const created = await api.createTask({ body: { title: "from node", done: false } });
assert.equal(created.ok, true, JSON.stringify(created));
assert.equal(created.value.title, "from node");
const id = created.value.id;

const listed = await api.listTasks();
assert.equal(listed.ok, true);
assert.ok(listed.value.some((task) => task.id === id), JSON.stringify(listed));

const got = await api.getTask({ id });
assert.deepEqual(got, { ok: true, status: 200, value: created.value });

const missing = await api.getTask({ id: 987654 });
const invalid = await api.createTask({ body: { title: "", done: false } });
const wrongShape = await api.createTask({ body: { done: "no" } });
const found = await api.searchTasks({ pattern: "from" });
console.log(JSON.stringify({ missing, invalid, wrongShape, found }));
