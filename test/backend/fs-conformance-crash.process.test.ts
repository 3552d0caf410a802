// The fs backend's lock area of the conformance suite with its one check that needs another process: a holder
// that took the lock and was SIGKILLed. The unit tier runs every area (test/backend/fs-conformance.test.ts)
// and leaves that one check out there, naming this file.
import { runLockConformance } from "../../src/testing/index.js";
import { Child } from "../helpers/children.js";
import { fsConformanceBackends, LOCK_STALE_MS } from "../helpers/fs-conformance-backends.js";

const { create, destroy, rootOf } = fsConformanceBackends();

runLockConformance({
  name: "fs",
  create,
  destroy,
  // Another process takes the lock and is SIGKILLed holding it.
  async crashedHolder(backend, id) {
    const holder = new Child("hold-session-lock.ts", [rootOf(backend), id, String(LOCK_STALE_MS)]);
    await holder.waitForLine((line) => line === "locked");
    holder.kill("SIGKILL");
    await holder.done();
  },
});
