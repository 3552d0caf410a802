import { rmSync } from "node:fs";
import { resolve } from "node:path";
import { defineConfig, type Options } from "tsup";

const publicEntry = resolve("src/index.ts");

/**
 * The CLI, the conformance suite (`agent-tape/testing`) and the adapters import the library only through
 * src/index.ts (the layer rule); in the build that import becomes the package itself ("agent-tape", which Node
 * resolves from inside the package to dist/index.*). So the tarball holds one copy of the library, and an app
 * that uses an adapter or the suite has one copy of SessionStore, not two: a second copy's private fields and
 * locks would not recognise the user's store.
 */
const entriesUseThePackage = {
  name: "entries-use-the-package",
  setup(build: {
    onResolve: (
      options: { filter: RegExp },
      callback: (args: { importer: string; resolveDir: string; path: string }) => unknown,
    ) => void;
  }) {
    build.onResolve({ filter: /(^|\/)index\.js$/ }, (args) =>
      args.importer !== publicEntry && resolve(args.resolveDir, args.path).replace(/\.js$/, ".ts") === publicEntry
        ? { path: "agent-tape", external: true }
        : undefined,
    );
  },
};

// Two builds run at once (ESM of every entry, CommonJS of the entries `require` can load), so neither may clean
// dist/ (one would delete what the other wrote): it is emptied here, once, when the config loads.
rmSync("dist", { recursive: true, force: true });

const shared: Options = {
  // TS 6 deprecates options tsup's d.ts step still passes; this silences that without changing output.
  dts: { compilerOptions: { ignoreDeprecations: "6.0" } },
  // Keep `node:` specifiers: they are what Node resolves fastest and unambiguously.
  removeNodeProtocol: false,
  target: "node20",
  platform: "node",
  // No source maps: the bundles are not minified, so a stack trace already points at readable code named as in
  // src/, and maps (which carry the whole source) would more than double the packed size (600 KB budget).
  sourcemap: false,
  clean: false,
  splitting: false,
  // The frameworks and the PostgreSQL driver are the user's (optional peers): never bundled.
  external: ["vitest", "ai", "@openai/agents", "pg"],
  esbuildPlugins: [entriesUseThePackage as never],
};

export default defineConfig([
  {
    ...shared,
    entry: {
      index: "src/index.ts",
      "testing/index": "src/testing/index.ts",
      "cli/main": "src/cli/main.ts",
      "adapters/ai-sdk": "src/adapters/ai-sdk/index.ts",
      "adapters/claude-agent-sdk": "src/adapters/claude-agent-sdk/index.ts",
      "adapters/openai-agents": "src/adapters/openai-agents/index.ts",
      "backend/index": "src/backend/index.ts",
      "backend/postgres": "src/backend/postgres/index.ts",
    },
    format: ["esm"],
  },
  {
    // The CLI is a program, and the suite registers vitest tests (ESM only): neither has a CommonJS form.
    ...shared,
    entry: {
      index: "src/index.ts",
      "adapters/ai-sdk": "src/adapters/ai-sdk/index.ts",
      "adapters/claude-agent-sdk": "src/adapters/claude-agent-sdk/index.ts",
      "adapters/openai-agents": "src/adapters/openai-agents/index.ts",
      "backend/index": "src/backend/index.ts",
      "backend/postgres": "src/backend/postgres/index.ts",
    },
    format: ["cjs"],
  },
]);
