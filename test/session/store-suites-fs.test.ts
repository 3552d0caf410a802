import { fsBackend } from "../../src/backend/index.js";
import { runStoreSuites } from "../helpers/store-suites.js";
import { tempDir } from "../helpers/fixture.js";

// The shared capture, rewind, undo, recovery, gc/verify and adapter suite (test/helpers/store-suites.ts) on fs.
runStoreSuites({ name: "fs", open: async () => fsBackend({ root: await tempDir("agent-tape-suite-fs-") }) });
