import { fsBackend } from "../../src/backend/index.js";
import { runStoreSuites } from "../helpers/store-suites.js";
import { TempRoots } from "../helpers/temp-root.js";

// The shared capture, rewind, undo, recovery, gc/verify and adapter suite (test/helpers/store-suites.ts) on fs.
const roots = new TempRoots();
runStoreSuites({ name: "fs", open: async () => fsBackend({ root: await roots.make("agent-tape-suite-fs-") }) });
