// Checked by tsc --strict with the generated clients (tests/tools/test_client_node.py): how a
// caller uses the task manager's client compiles, and narrowing a Result by `ok` and its
// error by `kind` works. Never run.
import { createClient, type GetTaskError, type Task } from "./tasks.js";

export async function titleOf(id: number): Promise<string> {
  const api = createClient("http://127.0.0.1:8091", { headers: { "X-Trace": "1" } });
  const answer = await api.getTask({ id });
  if (answer.ok) {
    const task: Task = answer.value;
    return task.title;
  }
  const error: GetTaskError = answer.error;
  if (error.kind === "not_found") return `no task ${id}: ${error.message}`;
  return error.kind;
}
