// Every code block of docs/guide.md runs as written, and prints the output the guide shows after it. The guide is a
// tour of one session: its blocks run in order, each seeing what the earlier ones made (`doc.state`); the adapter,
// shell, verify and error blocks each get a session of their own, so the tour's numbers stay the guide's.
import { expect, afterAll } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { aiSdkGiven, aiSdkImports, openaiAgentsGiven, openaiAgentsImports } from "./givens.js";
import { describeDocBlocks, docState } from "./doc-blocks.js";

/** The doc's one folder, made before its first block (its blocks run in order on it), removed after the last. */
let home = "";
afterAll(async () => {
  for (const open of (docState.open as { close(): Promise<void> }[] | undefined) ?? []) await open.close();
  if (home !== "") await rm(home, { recursive: true, force: true });
});

const fromTour = (...names: string[]) => `const { ${names.join(", ")} } = doc.state;`;

describeDocBlocks(
  "docs/guide.md",
  {
    runs: [
      {
        first: 'import { z } from "zod";',
        imports: 'import { mkdir, writeFile } from "node:fs/promises";\nimport { join } from "node:path";',
        before: `const root = join(doc.state.home, "sessions");
const workspace = join(doc.state.home, "ws");
await mkdir(join(workspace, "src"), { recursive: true });
await writeFile(join(workspace, ".gitignore"), "node_modules/\\n");
await writeFile(join(workspace, "src/app.ts"), 'console.log("v1");\\n');`,
        after: `doc.print(s, ev);
doc.state.open.push(store);
Object.assign(doc.state, { store, s, ev, root, workspace });`,
      },
      {
        first: 'await store.append(s.id, { type: "plan", payload: { steps: "edit" } });',
        before: fromTour("store", "s"),
        throws: true,
      },
      {
        first: "const checkpoints = new CheckpointStore(store); // maxFileBytes: 5 MiB by default",
        imports: `import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore } from "agent-tape";`,
        before: `${fromTour("store", "s", "workspace")}
await store.append(s.id, { type: "plan", payload: { steps: ["print v2", "add src/new.ts"] } });
const call = { callId: "c1", name: "edit_file", input: { path: "src/app.ts" } };
await store.append(s.id, { type: "tool_call", payload: call });`,
        after: `await store.append(s.id, { type: "tool_result", payload: { callId: "c1", output: "edited" } });
const checkpoint = (await store.readAll(s.id)).find((e) => e.type === "session_checkpoint");
doc.print(JSON.stringify(checkpoint.payload, null, 2));
doc.state.checkpoints = checkpoints;`,
      },
      {
        first: 'import { withCheckpoints } from "agent-tape";',
        before: `${fromTour("checkpoints", "s")}
const myTools = {
  edit_file: { execute: async (input: { path: string }) => "edited" },
  delete_folder: { execute: async (input: { path: string }) => "deleted" },
  bash: { execute: async (input: { command: string }) => "ran" },
};`,
        after: "doc.state.wrapped = Object.keys(tools);",
        check: (state) => expect(state.wrapped).toEqual(["edit_file", "delete_folder", "bash"]),
      },
      {
        first: 'import { aiSdkTape } from "agent-tape/ai-sdk";',
        imports: `${aiSdkImports}\nimport { SessionStore } from "agent-tape";`,
        before: aiSdkGiven("ai-sdk"),
        after: `doc.state.open.push(store);
doc.state.aiSdk = { steps: (await tape.messages()).map((m) => m.role) };`,
        check: (state) => expect(state.aiSdk).toEqual({ steps: ["user", "assistant", "tool", "assistant"] }),
      },
      {
        first: 'import { openaiAgentsEvents, openaiAgentsTape } from "agent-tape/openai-agents";',
        imports: openaiAgentsImports,
        before: `${openaiAgentsGiven("openai-agents")}\nconst tools = [editFile, bash];`,
        after: `doc.state.open.push(store);
doc.state.openaiAgents = (await store.readAll((await store.list())[0].id)).map((e) => e.type);`,
        check: (state) => expect(state.openaiAgents).toContain("session_checkpoint"),
      },
      {
        first: 'const output = await checkpoints.aroundCommand(s.id, { tool: "bash", callId }, (signal) =>',
        imports: `import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { CheckpointStore } from "agent-tape";`,
        before: `const { store } = doc.state;
const workspace = join(doc.state.home, "shell-ws");
await mkdir(workspace);
const s = await store.create({ workspace });
const checkpoints = new CheckpointStore(store);
const runShell = (command: string, options: { cwd: string; signal: AbortSignal }) =>
  promisify(execFile)("sh", ["-c", command], options);
const command = "echo made > made.txt";
const callId = "c1";`,
        after: `await checkpoints.close();
doc.state.shell = (await store.readAll(s.id)).find((e) => e.type === "session_checkpoint").payload.files;`,
        check: (state) => expect(state.shell).toEqual([{ path: "made.txt", kind: "absent" }]),
      },
      {
        first: "await rewind(store, s.id, { toSequence: ev.sequence, dryRun: true }); // the plan; touches nothing",
        before: fromTour("store", "s", "ev"),
        imports: 'import { rewind } from "agent-tape";',
        after: "doc.print(report);",
      },
      {
        first: "const undone = await undoRewind(store, s.id);",
        before: fromTour("store", "s"),
        imports: 'import { undoRewind } from "agent-tape";',
        after: 'doc.print(undone, (await store.readAll(s.id)).map((e) => "#" + e.sequence + " " + e.type));',
      },
      {
        first: "const again = new SessionStore({ root });",
        before: fromTour("root", "s"),
        imports: 'import { SessionStore } from "agent-tape";',
        after: `doc.print(await again.conversation(s.id), fork);
doc.state.open.push(again);`,
      },
      {
        first: 'import { forkIntoWorkspace } from "agent-tape";',
        before: `${fromTour("store", "s", "workspace")}\nprocess.chdir(workspace);`,
        after: "doc.print(report);",
      },
      {
        first: 'import { gc, verify } from "agent-tape";',
        imports: `import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore } from "agent-tape";`,
        before: `// A session whose checkpoint blob went missing.
const { store, root } = doc.state;
const workspace = join(doc.state.home, "verify-ws");
await mkdir(workspace);
await writeFile(join(workspace, "app.ts"), "v1\\n");
const s = await store.create({ workspace });
const taken = new CheckpointStore(store);
await taken.around(s.id, { tool: "edit_file", paths: ["app.ts"] }, async () => {});
const hash = (await store.readAll(s.id))[0].payload.files[0].blob;
const locked = await store.backend.lock(s.id); // lost, wherever the backend kept it
await locked.deleteBlob(hash);
await locked.release();`,
        after: "doc.print(health.problems[0]);",
      },
      {
        first: 'import { applyRetention, usage } from "agent-tape";',
        before: fromTour("store", "s"),
        after: "doc.state.usage = { log, blobs, records, total };",
        check: (state) => expect((state.usage as { total: number }).total).toBeGreaterThan(0),
      },
      {
        first: 'import { rewind, isAgentTapeError } from "agent-tape";',
        imports: `import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore } from "agent-tape";`,
        before: `// A rewind that meets a hand edit made after the tool's.
const { store } = doc.state;
const workspace = join(doc.state.home, "errors-ws");
await mkdir(workspace);
await writeFile(join(workspace, "app.ts"), "v1\\n");
const { id } = await store.create({ workspace });
const { sequence: toSequence } = await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
const edits = new CheckpointStore(store);
await edits.around(id, { tool: "edit_file", paths: ["app.ts"], callId: "c1" }, () =>
  writeFile(join(workspace, "app.ts"), "v2\\n"),
);
await writeFile(join(workspace, "app.ts"), "a hand edit\\n");
const logged: string[] = [];
const log = console.log;
console.log = (line: string) => logged.push(line);`,
        after: "console.log = log;\ndoc.state.logged = logged;",
        check: (state) => expect(state.logged).toEqual(["app.ts: modified"]),
      },
      {
        first: 'import { SessionStore } from "agent-tape";',
        after: `const made = await store.create();
doc.state.memoryLog = (await store.readAll(made.id)).length;
await store.close();`,
        check: (state) => expect(state.memoryLog).toBe(0),
      },
    ],
    notRun: {
      'import { claudeSessionStore } from "agent-tape/claude-agent-sdk";':
        "needs @anthropic-ai/claude-agent-sdk and the Claude Code binary its package brings (not a devDependency): " +
        "test/adapters/claude-agent-sdk-crash.claude.test.ts runs these options with them, where .ci/run installs them",
      ["33  2026-12-01T11:16:02Z  tool_call            Edit [t2] " +
        '{"file_path":"/tmp/agent-tape-claude-7XP1Vw/ws/notes.md",…']:
        "`agent-tape show` of a run of Claude Code (see the block above): only where the SDK is installed",
      'import { runBackendConformance } from "agent-tape/testing";':
        "registers vitest tests, so it runs as a test file of its own: test/backend/fs-conformance.test.ts, " +
        "memory-conformance.test.ts and postgres-conformance.test.ts are this block for each backend",
    },
  },
  async () => {
    home = await mkdtemp(join(tmpdir(), "agent-tape-guide-"));
    Object.assign(docState, { home, open: [] });
    return home;
  },
);
