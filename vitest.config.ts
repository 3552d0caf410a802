import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";
import { testTempRoot } from "./test/setup/temp-root.js";

// The tests' temp folders on a tmpfs where there is one (test/setup/temp-root.ts says why and how to choose).
const tempRoot = testTempRoot(process.env);
if (tempRoot === undefined) delete process.env.TMPDIR;
else process.env.TMPDIR = tempRoot;

// Tiers, chosen by file name (docs/testing.md, "Tiers"): `npm run test:fast` runs "unit", `npm run test:slow` the
// others but "node22" and "claude", `npm test` all of them.
const propertyTests = "test/**/*.property.test.ts";
// Unit tests too heavy for the tier that runs while you work (exhaustive tables, deep trees, large logs): the
// same kind of test, in a project of its own that `npm test` and `npm run test:slow` run and `test:fast` does not.
const slowTests = "test/**/*.slow.test.ts";
const processTests = "test/**/*.process.test.ts";
// Long runs against the kernel's own file events (the workspace watcher under renames, swaps and floods): no child
// process, but tens of seconds each, so out of the unit tier that runs while you work.
const scenarioTests = "test/**/*.scenario.test.ts";
// Runs the CLI as a real program; it lives with the other CLI tests, so it is named here rather than by suffix.
const cliAsProgram = "test/cli/entry.test.ts";
// Tests of adapters whose frameworks need Node 22 (`@openai/agents`): a project of their own, defined only on a
// Node that runs them, so on Node 20 `npm test` leaves them out instead of failing; CI runs them on 22 and 24.
const node22Tests = "test/**/*.node22.test.ts";
const onNode22 = Number(process.versions.node.split(".")[0]) >= 22;
// Tests of the Claude Agent SDK adapter with the real SDK and Claude Code: a project of their own, defined only
// where .ci/run installed the SDK into .tools/ (its package brings a 400 MB binary: no devDependency).
const claudeTests = "test/**/*.claude.test.ts";
// PostgreSQL tests: projects of their own, the only ones that start (or reach) a server (test/setup/postgres-server.ts).
const postgresTests = "test/**/postgres-*.test.ts";
const postgresProcessTests = "test/**/postgres-*.process.test.ts";
// The files that run a folder's suites with every store on PostgreSQL (test/helpers/stores-on-postgres.ts): that
// import changes the fixture's stores for the rest of the worker's life, so each of these files has its own.
const postgresSuites = "test/**/postgres-*-suites.test.ts";
const postgresServer = ["test/setup/postgres-server.ts"];
// The projects whose tests start child processes run them from bundles built once per run (docs/testing.md,
// "Child processes").
const childBundles = "test/setup/child-bundles.ts";
// In those projects, pg's warning of a query sent to a client still running one fails the test (the file says why).
const postgresSetup = ["test/setup/pg-one-query-at-a-time.ts"];
const claudeInstalled = existsSync(".tools/claude-agent-sdk/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs");

// Long runs whose size is what they prove (a reader's peak memory over 300,000 events, a fork of 200,000 in a small
// heap): run by the soak run (`npm run test:soak`, and CI's AGENT_TAPE_SOAK=1 npm test), which defines their
// project; out of `npm test`, which must stay under four minutes on two cores (docs/testing.md, "Tiers").
const soakTests = "test/**/*.soak.test.ts";
const soaking = process.env.AGENT_TAPE_SOAK === "1";

const excluded = [...configDefaults.exclude, soakTests];

export default defineConfig({
  resolve: {
    // The CLI loads the PostgreSQL backend by the package's own entry (src/cli/store-location.ts); in the tests,
    // as under tsx (tsconfig.json "paths"), that entry is its source.
    alias: { "agent-tape/postgres": fileURLToPath(new URL("src/backend/postgres/index.ts", import.meta.url)) },
  },
  test: {
    // Transformed modules kept on disk (node_modules/.experimental-vitest-cache), keyed by each file's content and
    // the config: shared by the projects of one run, which each transformed src/ again, and by the next run
    // (docs/testing.md, "Scripts and times").
    experimental: { fsModuleCache: true },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two files at once on two cores: crash and multi-process tests start real children. The unit tier alone mostly
    // waits (fsyncs, leases running out), so `npm run test:fast` runs four (AGENT_TAPE_TEST_WORKERS=4); four for
    // the whole suite ran no faster in CI and ran a property test past its timeout (docs/testing.md, "Tiers").
    fileParallelism: true,
    maxWorkers: Number(process.env.AGENT_TAPE_TEST_WORKERS ?? 2),
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          // The unit files share no state but modules: importing src/ once per worker instead of once per
          // file halves the tier's CPU time (32 s -> 16 s measured). Each file still has its own temp folders.
          isolate: false,
          // In threads rather than processes: less CPU again (docs/testing.md, "Tiers"). No unit file calls
          // process.chdir, which a worker thread may not (the docs' blocks do: they are in "slow").
          pool: "threads",
          exclude: [
            ...excluded,
            slowTests,
            propertyTests,
            processTests,
            scenarioTests,
            cliAsProgram,
            node22Tests,
            claudeTests,
            postgresTests,
          ],
        },
      },
      // No import-time state either, as in "unit"; in processes, for the docs' blocks' process.chdir.
      { extends: true, test: { name: "slow", include: [slowTests], exclude: excluded, isolate: false } },
      {
        extends: true,
        test: {
          name: "postgres",
          include: [postgresTests],
          exclude: [...excluded, postgresProcessTests, postgresSuites],
          globalSetup: postgresServer,
          setupFiles: postgresSetup,
          // No import-time state, as in "unit": src/ imported once per worker. Not the suites files (soak, below).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "postgres-process",
          include: [postgresProcessTests],
          exclude: excluded,
          globalSetup: [...postgresServer, childBundles],
          setupFiles: postgresSetup,
        },
      },
      // These three share no import-time state between files either (the child bundles' index is read per run
      // folder, test/helpers/children.ts; the files that set TMPDIR put it back): importing src/ once per worker
      // saves 1.7 s of CPU a file (docs/testing.md, "Tiers").
      { extends: true, test: { name: "property", include: [propertyTests], exclude: excluded, isolate: false } },
      { extends: true, test: { name: "scenario", include: [scenarioTests], exclude: excluded, isolate: false } },
      {
        extends: true,
        test: {
          name: "process",
          include: [processTests, cliAsProgram],
          exclude: [...excluded, postgresTests],
          isolate: false,
          // The session page's browser test needs Chromium: installed here as root, or the one command to run.
          globalSetup: ["test/setup/chromium.ts", childBundles],
        },
      },
      // The second run of the folders' suites, with every store on PostgreSQL: in the soak run, not in `npm test`,
      // which runs them on the fs backend and PostgreSQL's own tests (docs/testing.md, "Tiers"). The server's work
      // for a schema per store made them a tenth of the suite's time.
      ...(soaking
        ? [
            {
              extends: true as const,
              test: {
                name: "postgres-suites",
                include: [postgresSuites],
                exclude: excluded,
                globalSetup: postgresServer,
                setupFiles: postgresSetup,
              },
            },
            {
              extends: true as const,
              test: {
                name: "soak",
                include: [soakTests],
                exclude: configDefaults.exclude,
                globalSetup: [...postgresServer, childBundles],
                setupFiles: postgresSetup,
              },
            },
          ]
        : []),
      ...(onNode22
        ? [
            {
              extends: true as const,
              test: { name: "node22", include: [node22Tests], exclude: excluded, globalSetup: [childBundles] },
            },
          ]
        : []),
      ...(claudeInstalled
        ? [
            {
              extends: true as const,
              test: { name: "claude", include: [claudeTests], exclude: excluded, globalSetup: [childBundles] },
            },
          ]
        : []),
    ],
  },
});
