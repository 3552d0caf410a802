import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "testing/index": "src/testing/index.ts", "cli/main": "src/cli/main.ts" },
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
  external: ["vitest"],
});
