import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Crash and multi-process tests spawn real children; two cores do not like many at once.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
