import { defineConfig } from "tsup";

/**
 * An adapter imports the library only through src/index.ts (the layer rule); in the build that import becomes
 * the package itself ("agent-tape", which Node resolves from inside the package to dist/index.*), so an app
 * that uses an adapter has one copy of SessionStore, not two: a second copy's private fields and locks
 * would not recognise the user's store.
 */
const adaptersUseThePackage = {
  name: "adapters-use-the-package",
  setup(build: {
    onResolve: (options: { filter: RegExp }, callback: (args: { importer: string }) => unknown) => void;
  }) {
    build.onResolve({ filter: /^\.\.\/\.\.\/index\.js$/ }, (args) =>
      args.importer.includes("/src/adapters/") ? { path: "agent-tape", external: true } : undefined,
    );
  },
};

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "testing/index": "src/testing/index.ts",
    "cli/main": "src/cli/main.ts",
    "adapters/ai-sdk": "src/adapters/ai-sdk/index.ts",
    "adapters/claude-agent-sdk": "src/adapters/claude-agent-sdk/index.ts",
    "adapters/openai-agents": "src/adapters/openai-agents/index.ts",
    "backend/postgres": "src/backend/postgres/index.ts",
  },
  format: ["esm", "cjs"],
  // TS 6 deprecates options tsup's d.ts step still passes; this silences that without changing output.
  dts: { compilerOptions: { ignoreDeprecations: "6.0" } },
  // Keep `node:` specifiers: they are what Node resolves fastest and unambiguously.
  removeNodeProtocol: false,
  target: "node20",
  platform: "node",
  sourcemap: true,
  clean: true,
  splitting: false,
  // The frameworks and the PostgreSQL driver are the user's (optional peers): never bundled.
  external: ["vitest", "ai", "@openai/agents", "pg"],
  esbuildPlugins: [adaptersUseThePackage as never],
});
