import { blobsArea } from "./blobs.js";
import { lockArea } from "./lock.js";
import { logArea } from "./log.js";
import { recordsArea } from "./records.js";
import { recoveryArea } from "./recovery.js";
import { rewindArea } from "./rewind.js";
import { sessionsArea } from "./sessions.js";
import { runAreas, type BackendConformanceOptions } from "./suite.js";

/**
 * Registers (with vitest's `describe` / `it`) every check a `StorageBackend` must pass, area by
 * area — sessions, log, blobs, records, lock, recovery, and checkpoint + rewind + undo through a real
 * SessionStore — under one describe, one backend per test. Call it from one of your test files:
 *
 * ```ts
 * import { runBackendConformance } from "agent-tape/testing";
 * runBackendConformance({ name: "postgres", create: () => postgresBackend({ pool }), destroy: dropTables });
 * ```
 *
 * Each area is exported on its own too (`runLogConformance(options)` …) for a backend being built
 * area by area. Beyond what `StorageBackend`'s JSDoc states, the suite fixes the error codes callers
 * rely on: a rejected append (a sequence not above the one before) and a write through a released
 * lock are INVALID_ARGUMENT, as is a blob name that is not a lowercase hex sha256 or a record name
 * with a path separator. Optional methods are checked against the required ones; what a crash leaves
 * behind is checked only through the `crashLeftState` and `crashedHolder` hooks, which reach past the
 * interface.
 */
export function runBackendConformance(options: BackendConformanceOptions): void {
  runAreas(options, [sessionsArea, logArea, blobsArea, recordsArea, lockArea, recoveryArea, rewindArea]);
}
