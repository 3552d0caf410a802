import { defineConfig } from "vitest/config";
export default defineConfig({ test: { root: "/work/wt/docs", include: ["test/adapters/openai-agents-crash.node22.test.ts"], testTimeout: 400_000, hookTimeout: 400_000, maxWorkers: 1 } });
