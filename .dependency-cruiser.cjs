// The layer rule (docs/ARCHITECTURE.md, "Layers"): every import points down this list, never up.
// `npm run lint:deps` checks it; `.ci/run` runs that.
const layers = ["core", "backend", "blobs", "session", "checkpoint", "rewind", "view", "maintenance"];

/** One rule per layer: nothing in it may import a layer listed after it. */
const upward = layers.slice(0, -1).map((layer, i) => ({
  name: `${layer}-imports-only-lower-layers`,
  comment: `src/${layer}/ sits below ${layers.slice(i + 1).join(", ")}: it must not import them.`,
  severity: "error",
  from: { path: `^src/${layer}/` },
  to: { path: `^src/(${layers.slice(i + 1).join("|")}|cli|testing|adapters)/|^src/index\\.ts$` },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: "layers-do-not-import-the-entry-points",
      comment:
        "The library's layers never import an entry (agent-tape, agent-tape/backend), the CLI, the test kit or the " +
        "adapters.",
      severity: "error",
      from: { path: `^src/(${layers.join("|")})/` },
      to: { path: "^src/(cli|testing|adapters)/|^src/index\\.ts$|^src/backend/index\\.ts$" },
    },
    {
      name: "cli-imports-only-the-public-entry",
      comment:
        "The CLI is a user of the library like any other: it sees only src/index.ts (it opens its stores by root, " +
        "so it needs no backend from agent-tape/backend).",
      severity: "error",
      from: { path: "^src/cli/" },
      to: { path: `^src/(${layers.join("|")}|testing|adapters)/` },
    },
    {
      name: "adapters-import-only-the-public-entry",
      comment: "An adapter is a user of the library like any other: it sees only the public entry.",
      severity: "error",
      from: { path: "^src/adapters/" },
      to: { path: `^src/(${layers.join("|")}|cli|testing)/` },
    },
    {
      name: "only-the-postgres-backend-imports-it",
      comment:
        "src/backend/postgres/ is its own entry (agent-tape/postgres), so `pg`, an optional peer, loads only there: " +
        "nothing else in the library imports it, and it imports only the backend layer and core.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/backend/postgres/" },
      to: { path: "^src/backend/postgres/|^node_modules/pg/" },
    },
    {
      name: "postgres-backend-imports-only-backend-and-core",
      comment: "The PostgreSQL backend is a backend like fs and memory: it sees src/backend and src/core only.",
      severity: "error",
      from: { path: "^src/backend/postgres/" },
      to: { path: "^src/", pathNot: "^src/(backend|core)/" },
    },
    {
      name: "no-circular",
      comment: "A cycle makes two files one idea; split it or merge them.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    exclude: { path: "^(test|bench|examples|dist)/" },
  },
};
