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

// An attachment: a Blob sent as multipart/form-data, its bytes downloaded back as they are.
const bytes = new Uint8Array(1000).map((_, i) => (i * 7) % 256);
const file = new File([bytes], "../notes\u0001.bin", { type: "application/octet-stream" });
const attached = await api.attachFile({ id, file });
assert.equal(attached.ok, true, JSON.stringify(attached));
assert.equal(attached.value.size, 1000);
const downloaded = await api.downloadAttachment({ id: attached.value.id });
assert.equal(downloaded.ok, true, JSON.stringify(downloaded));
assert.ok(downloaded.value instanceof Uint8Array);
assert.deepEqual([...downloaded.value], [...bytes]);
const attachments = await api.listAttachments();
const removed = await api.deleteAttachment({ id: attached.value.id });
assert.equal(removed.ok, true, JSON.stringify(removed));
const gone = await api.downloadAttachment({ id: attached.value.id });
const noTask = await api.attachFile({ id: 987654, file });

const missing = await api.getTask({ id: 987654 });
const invalid = await api.createTask({ body: { title: "", done: false } });
const wrongShape = await api.createTask({ body: { done: "no" } });
const found = await api.searchTasks({ pattern: "from" });
console.log(JSON.stringify({ missing, invalid, wrongShape, found, attached, attachments, gone,
                             noTask }));
