// `node --import tsx examples/shell-tool.ts`: a shell tool whose side effects rewind like edits.
// The command creates, edits, moves and deletes files it never names; the workspace index records
// what changed, and a rewind puts the tree back byte for byte (then undoRewind puts it forward).
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CheckpointStore, SessionStore, rewind, undoRewind } from "../src/index.js"; // in your project: "agent-tape"
import { eventLine, heading, note, paint, printWorkspace, readWorkspace, sameWorkspace } from "./narrate.js";
import type { Tool } from "./tools.js";
import { withCheckpoints } from "../src/index.js"; // in your project: from "agent-tape"

const home = await mkdtemp(join(tmpdir(), "agent-tape-shell-"));
const workspace = join(home, "workspace");
await mkdir(join(workspace, "src"), { recursive: true });
await mkdir(join(workspace, "old"));
await writeFile(join(workspace, "src/app.ts"), 'export const version = "v1";\n');
await writeFile(join(workspace, "notes.txt"), "- ship v2\n");
await writeFile(join(workspace, "old/readme.md"), "# Old docs\n");
await writeFile(join(workspace, ".gitignore"), "node_modules/\n");

const store = new SessionStore({ root: join(home, "sessions") });
const session = await store.create({ title: "shell tool", workspace });

// A plain shell tool; `"shell"` tells withCheckpoints to wrap it in aroundCommand.
const shellTools: Record<string, Tool<{ command: string }>> = {
  run_shell: {
    description: "Run a shell command in the workspace.",
    execute: async ({ command }, call) => {
      const { stdout } = await promisify(execFile)("sh", ["-c", command], {
        cwd: workspace,
        ...(call.abortSignal && { signal: call.abortSignal }),
      });
      return stdout;
    },
  },
};
const tools = withCheckpoints(shellTools, new CheckpointStore(store), session.id, { run_shell: "shell" });

heading("1. The agent runs one shell command");
const request = await store.append(session.id, {
  type: "message",
  payload: { role: "user", content: "Release v2: docs folder, bump the version, tidy up." },
});
const command =
  "mkdir -p docs && printf '# Docs\\n' > docs/index.md && sed -i 's/v1/v2/' src/app.ts && " +
  "mv notes.txt docs/notes.txt && rm -r old && mkdir -p node_modules/x && echo dep > node_modules/x/i.js";
console.log(`  $ ${command}`);
const before = await readWorkspace(workspace);
await tools.run_shell!.execute({ command }, { toolCallId: "call_1" });
const after = await readWorkspace(workspace);
for (const event of await store.readAll(session.id)) console.log(eventLine(event));
note("One session_checkpoint names every path the command changed, with its state before it;");
note("created paths are `absent`. node_modules/ is in .gitignore: not captured, never touched.");

heading(`2. Rewind to #${request.sequence}, before the command`);
printWorkspace("files after the command:", after);
const report = await rewind(store, session.id, { toSequence: request.sequence });
for (const change of report.changes)
  console.log(`    ${paint(change.action === "delete" ? "red" : "green", change.action.padEnd(8))}${change.path}`);
const rewound = await readWorkspace(workspace);
const ignoredKept = rewound.get("node_modules/x/i.js") === "dep\n";
rewound.delete("node_modules/");
rewound.delete("node_modules/x/");
rewound.delete("node_modules/x/i.js");
printWorkspace("files after the rewind (node_modules/ aside):", rewound);
check(sameWorkspace(rewound, before), "the tracked files are exactly what they were before the command");
check(ignoredKept, "node_modules/ (ignored) was left as the command made it");

heading("3. undoRewind: the command's effects come back");
await undoRewind(store, session.id);
check(sameWorkspace(await readWorkspace(workspace), after), "the workspace is exactly what the command left");

await store.close();
await rm(home, { recursive: true });

function check(ok: boolean, claim: string): void {
  console.log(`  ${ok ? paint("green", "✓") : paint("red", "✗ NOT TRUE:")} ${claim}`);
  if (!ok) process.exitCode = 1;
}
