// Child process that forks one session into a new folder and prints one JSON line: the report's counts, or the
// error's code. Run under `ulimit -f` (a write past it fails) or killed mid-copy by the test.
// argv: root parentId workspace [atSequence]
import { SessionStore, forkIntoWorkspace, isAgentTapeError } from "../../src/index.js";

const [root, parentId, workspace, at] = process.argv.slice(2);
if (!root || !parentId || !workspace) throw new Error("usage: fork-into-workspace root parentId workspace [at]");

const store = new SessionStore({ root, durability: "none" });
try {
  const report = await forkIntoWorkspace(store, parentId, {
    workspace,
    ...(at !== undefined && { atSequence: Number(at) }),
  });
  process.stdout.write(`${JSON.stringify({ id: report.session.id, files: report.files })}\n`);
} catch (error) {
  const code = isAgentTapeError(error) ? error.code : String(error);
  // FORK_FAILED and STORAGE_FAILED carry the OS's code; the guard's union of classes narrows to them.
  const osCode = isAgentTapeError(error) && "osCode" in error ? error.osCode : undefined;
  process.stdout.write(`${JSON.stringify({ error: code, osCode, message: (error as Error).message })}\n`);
} finally {
  await store.close();
}
