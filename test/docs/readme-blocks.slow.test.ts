// Every code block of README.md runs as written, or is included from an example that runs, or is listed here with
// why not. Each quickstart runs on a store of its own, with what the README takes as given (test/docs/givens.ts).
import { afterAll, expect } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeDocBlocks, docState } from "./doc-blocks.js";
import { aiSdkGiven, aiSdkImports, openaiAgentsGiven, openaiAgentsImports } from "./givens.js";

/** The doc's one folder, made before its first block (its blocks run in order on it), removed after the last. */
let home = "";
afterAll(async () => {
  for (const open of (docState.open as { close(): Promise<void> }[] | undefined) ?? []) await open.close();
  if (home !== "") await rm(home, { recursive: true, force: true });
});

/** A store, a session `s` whose #1 is a message, then call c1's checkpointed edit of app.ts (v1 to v2). */
const editedSession = (name: string) => `
const root = join(doc.state.home, "${name}", "sessions");
const workspace = join(doc.state.home, "${name}", "ws");
await mkdir(workspace, { recursive: true });
await writeFile(join(workspace, "app.ts"), "v1\\n");
const store = new SessionStore({ root });
doc.state.open.push(store);
const s = await store.create({ workspace });
await store.append(s.id, { type: "message", payload: { role: "user", content: "Make app.ts print v2" } });
const edits = new CheckpointStore(store);
await edits.around(s.id, { tool: "edit_file", paths: ["app.ts"], callId: "c1" }, () =>
  writeFile(join(workspace, "app.ts"), "v2\\n"),
);`;

const fsImports = 'import { mkdir, readFile, writeFile } from "node:fs/promises";\nimport { join } from "node:path";';

describeDocBlocks(
  "README.md",
  {
    runs: [
      {
        first: 'import { aiSdkTape } from "agent-tape/ai-sdk";',
        imports: `${aiSdkImports}\nimport { SessionStore } from "agent-tape";`,
        before: aiSdkGiven("ai-sdk"),
        after: `doc.state.open.push(store);
const roles = (await tape.messages()).map((m) => m.role);
doc.state.aiSdk = { roles, notes: await readFile(join(workspace, "notes.md"), "utf8") };`,
        check: (state) =>
          // Both turns are on the tape: the second started from tape.messages(), the first's call and result.
          expect(state.aiSdk).toEqual({
            roles: ["user", "assistant", "tool", "assistant", "user", "assistant"],
            notes: "edited\n",
          }),
      },
      {
        first: 'import { openaiAgentsEvents, openaiAgentsTape } from "agent-tape/openai-agents";',
        imports: openaiAgentsImports,
        before: openaiAgentsGiven("openai-agents"),
        after: `doc.state.open.push(store);
doc.state.openaiAgents = (await store.readAll((await store.list())[0].id)).map((e) => e.type);`,
        check: (state) =>
          expect(state.openaiAgents).toEqual(
            expect.arrayContaining(["tool_call", "session_checkpoint", "session_file_states", "tool_result"]),
          ),
      },
      {
        first: "const checkpoints = new CheckpointStore(store, {",
        imports: `${fsImports}
import { CheckpointStore, SessionStore } from "agent-tape";
import { aiSdkTape } from "agent-tape/ai-sdk";`,
        before: `const workspace = join(doc.state.home, "checkpoints-option");
await mkdir(workspace);
const store = new SessionStore({ root: join(workspace, ".sessions") });
doc.state.open.push(store);
const s = await store.create({ workspace });`,
        after: `// A file over maxFileBytes, written by a tool of the tape: recorded skipped, as the comment says.
const write = { execute: async () => writeFile(join(workspace, "big.bin"), "") };
const big = tape.tools({ write }, { write: () => ["big.bin"] });
await writeFile(join(workspace, "big.bin"), Buffer.alloc(6 * 1024 * 1024));
await big.write.execute({}, { toolCallId: "c1", messages: [] });
await checkpoints.close();
doc.state.bigFile = (await store.readAll(s.id)).find((e) => e.type === "session_checkpoint").payload.files[0];`,
        check: (state) =>
          expect(state.bigFile).toMatchObject({ path: "big.bin", kind: "skipped", reason: "too_large" }),
      },
      {
        first:
          "await rewind(store, s.id, { toSequence: 1, dryRun: true }); // the plan, with line counts; touches nothing",
        imports: `${fsImports}
import { CheckpointStore, SessionStore, forkIntoWorkspace, rewind, undoRewind } from "agent-tape";`,
        before: `${editedSession("rewind")}\nprocess.chdir(workspace);`,
        after: `doc.state.rewound = {
  rewind: [report.filesRestored, report.eventsRemoved],
  app: await readFile(join(workspace, "app.ts"), "utf8"),
  fork: [fork.lastSequence, fork.workspace === workspace],
  try2: await readFile(join(workspace, "../try-2/app.ts"), "utf8"),
};`,
        // Rewound to #1 and undone (v2 again); the fork shares the folder; try-2 holds app.ts as at #1.
        check: (state) => expect(state.rewound).toEqual({ rewind: [1, 2], app: "v2\n", fork: [2, true], try2: "v1\n" }),
      },
    ],
    notRun: {
      "npm ci && npm run demo   # a scripted agent edits files, rewinds, undoes the rewind, restarts and resumes":
        "`npm ci` installs and `npm test` is the whole suite: .ci/run runs both on a clean clone; the demo is " +
        "examples/agent-loop.ts, which test/examples/examples.process.test.ts runs and checks",
      "npm install agent-tape          # Node 20 or later; ESM and CommonJS":
        "installs from the registry: scripts/check-package.mjs (npm run check:package) checks the tarball it " +
        "would install, under ESM and CommonJS",
      'import { foldSessionSummary, query } from "@anthropic-ai/claude-agent-sdk";':
        "needs @anthropic-ai/claude-agent-sdk and the Claude Code binary its package brings (not a devDependency): " +
        "test/adapters/claude-agent-sdk-crash.claude.test.ts runs these options with them, where .ci/run installs them",
      'import { SessionStore } from "agent-tape";':
        "needs a PostgreSQL server: test/docs/postgres-readme-block.test.ts runs it in the postgres project",
    },
  },
  async () => {
    home = await mkdtemp(join(tmpdir(), "agent-tape-readme-"));
    Object.assign(docState, { home, open: [] });
    return home;
  },
);
