// Installable: the package as npm would ship it, installed into a fresh project the way a
// user installs it, then loaded as ESM and as CommonJS, its CLI run, and its types compiled by a strict tsc.
// Fast on purpose: it packs the dist/ already built (`prepare` rebuilds only when sources are newer) and installs
// from the local npm cache (--prefer-offline, no audit, no fund).
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const exec = promisify(execFile);
const repository = fileURLToPath(new URL("../..", import.meta.url));
// One install for the whole file, made in beforeAll where no test runs yet: the one temp folder not made with
// test/helpers/fixture.ts (test/fixture-everywhere.test.ts lists it).
let base: string;
let project: string;

const npm = (args: string[], cwd: string) => exec("npm", args, { cwd, maxBuffer: 16 * 1024 * 1024 });
const node = (args: string[]) => exec(process.execPath, args, { cwd: project });

beforeAll(async () => {
  await exec(process.execPath, ["scripts/prepare.mjs"], { cwd: repository });
  base = await mkdtemp(join(tmpdir(), "agent-tape-pack-"));
  const packed = join(base, "packed");
  project = join(base, "project");
  await exec("mkdir", ["-p", packed, project]);
  await npm(["pack", "--ignore-scripts", "--pack-destination", packed], repository);
  const [tarball] = await readdir(packed);
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "uses-agent-tape", private: true }));
  const { version: aiVersion } = (await import("ai/package.json", { with: { type: "json" } })).default;
  await npm(
    [
      "install",
      join(packed, tarball!),
      `ai@${aiVersion}`,
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      "--no-package-lock",
    ],
    project,
  );
}, 300_000);
afterAll(() => rm(base, { recursive: true, force: true }));

describe("the packed package, installed into a fresh project", () => {
  it("ships dist, README and LICENSE, nothing else", async () => {
    const files = await readdir(join(project, "node_modules/agent-tape"));
    expect(files.sort()).toEqual(["LICENSE", "README.md", "dist", "package.json"]);
  });

  it("loads as ESM and as CommonJS, each entry with its names", async () => {
    const esm = await node([
      "--input-type=module",
      "-e",
      `const m = await import("agent-tape"); const a = await import("agent-tape/ai-sdk");
       const c = await import("agent-tape/claude-agent-sdk"); const o = await import("agent-tape/openai-agents");
       const b = await import("agent-tape/backend");
       const names = [m.SessionStore, m.withCheckpoints, a.aiSdkTape, c.claudeSessionStore, o.openaiAgentsTape,
         b.fsBackend, b.memoryBackend];
       console.log(names.map((name) => typeof name).join());
       console.log(import.meta.resolve("agent-tape/testing"));`,
    ]);
    // agent-tape/openai-agents loads with no @openai/agents installed: it imports only the SDK's types.
    expect(esm.stdout.split("\n")[0]).toBe("function,function,function,function,function,function,function");
    expect(esm.stdout).toContain("node_modules/agent-tape/dist/testing/index.js");
    const cjs = await node([
      "-e",
      `const m = require("agent-tape"); const a = require("agent-tape/ai-sdk");
       const c = require("agent-tape/claude-agent-sdk"); const o = require("agent-tape/openai-agents");
       const b = require("agent-tape/backend");
       console.log([typeof m.SessionStore, typeof a.aiSdkTape, typeof c.claudeSessionStore, typeof o.openaiAgentsTape,
         typeof b.fsBackend].join());`,
    ]);
    expect(cjs.stdout.split("\n")[0]).toBe("function,function,function,function,function");
  });

  it("an adapter shares the app's copy of the library: a store made in the app works through it", async () => {
    const run = await node([
      "--input-type=module",
      "-e",
      `import { SessionStore } from "agent-tape";
       import { claudeSessionStore, claudeEvents } from "agent-tape/claude-agent-sdk";
       import { mkdtempSync } from "node:fs"; import { tmpdir } from "node:os"; import { join } from "node:path";
       const root = join(mkdtempSync(join(tmpdir(), "agent-tape-pack-")), "s");
       const store = new SessionStore({ root, events: claudeEvents });
       const claude = claudeSessionStore({ store });
       const key = { projectKey: "p", sessionId: "s1" };
       await claude.append(key, [{ type: "user", uuid: "u1" }]);
       console.log(JSON.stringify(await claude.load(key))); await store.close();`,
    ]);
    expect(run.stdout.trim()).toBe('[{"type":"user","uuid":"u1"}]');
  });

  it("a backend from agent-tape/backend serves a store from agent-tape", async () => {
    const run = await node([
      "--input-type=module",
      "-e",
      `import { SessionStore } from "agent-tape";
       import { fsBackend } from "agent-tape/backend";
       import { mkdtempSync } from "node:fs"; import { tmpdir } from "node:os"; import { join } from "node:path";
       const root = join(mkdtempSync(join(tmpdir(), "agent-tape-pack-")), "s");
       const store = new SessionStore({ backend: fsBackend({ root }) });
       await store.create({ id: "s1" });
       await store.append("s1", { type: "message", payload: { role: "user", content: "hi" } });
       const events = await store.readAll("s1");
       console.log(JSON.stringify(events.map((event) => [event.type, event.payload]))); await store.close();`,
    ]);
    expect(run.stdout.trim()).toBe('[["message",{"content":"hi","role":"user"}]]');
  });

  it("installs the CLI as a bin", async () => {
    const { stdout } = await exec(join(project, "node_modules/.bin/agent-tape"), ["--version"]);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("the installed CLI without the pg driver: --store postgres://… is PACKAGE_MISSING, naming pg", async () => {
    // pg is an optional peer: not installed here. The CLI reaches the backend by agent-tape/postgres, which needs it.
    const run = await exec(join(project, "node_modules/.bin/agent-tape"), [
      "list",
      "--json",
      "--store",
      "postgres://nobody@127.0.0.1:1/none",
    ]).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(run.code).toBe(1);
    const error = JSON.parse(run.stderr).error;
    expect(error.code).toBe("PACKAGE_MISSING");
    expect(error.message).toContain("npm install pg");
  });

  it("its types compile under a strict tsc that checks the package's own declarations", async () => {
    await writeFile(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: false,
          skipDefaultLibCheck: true,
          noEmit: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          lib: ["es2022", "esnext.disposable", "dom"],
          types: ["node"],
          typeRoots: [join(repository, "node_modules/@types")],
        },
        files: ["use.mts"],
      }),
    );
    await writeFile(
      join(project, "use.mts"),
      `import { SessionStore, CheckpointStore, withCheckpoints, rewind, type StoredEvent } from "agent-tape";
import { memoryBackend, type StorageBackend } from "agent-tape/backend";
import { aiSdkTape } from "agent-tape/ai-sdk";
import { claudeSessionStore, type ClaudeTapeSessionStore } from "agent-tape/claude-agent-sdk";
import { z } from "zod";
const store = new SessionStore({ root: "/tmp/x", events: { plan: z.object({ steps: z.array(z.string()) }) } });
const plain: SessionStore = store;
const edit = { execute: async (input: { path: string }) => input.path };
const touches = { edit: (input: { path: string }) => [input.path] };
const tools = withCheckpoints({ edit }, new CheckpointStore(store), "id", touches);
const tape = aiSdkTape({ store, sessionId: "id" });
const claude: ClaudeTapeSessionStore = claudeSessionStore({ root: "/tmp/y" });
const last: StoredEvent | undefined = (await store.readAll("id", { types: ["plan"] }))[0];
const backend: StorageBackend = memoryBackend();
const inMemory = new SessionStore({ backend });
export { plain, tools, tape, claude, last, rewind, inMemory };
`,
    );
    const tsc = join(repository, "node_modules/typescript/bin/tsc");
    const run = await node([tsc, "-p", "."]).catch((error: { stdout: string }) => error);
    // `ai` 6's own declarations do not pass skipLibCheck: false (json-schema has no types, and TS 6 is stricter
    // on its generics); those lines are the SDK's, not ours. Every other line is an error in agent-tape.
    const ours = run.stdout
      .split("\n")
      .filter((line) => /error TS/.test(line) && !/^node_modules\/(ai|@ai-sdk)\//.test(line));
    expect(ours).toEqual([]);
  }, 180_000);
});
