import { blobsArea } from "./blobs.js";
import { lockArea } from "./lock.js";
import { logArea } from "./log.js";
import { recordsArea } from "./records.js";
import { recoveryArea } from "./recovery.js";
import { rewindArea } from "./rewind.js";
import { sessionsArea } from "./sessions.js";
import { InvalidArgumentError } from "../core/errors.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea } from "./suite.js";

/** The suite's areas by name, in the order they run. */
const AREAS = {
  sessions: sessionsArea,
  log: logArea,
  blobs: blobsArea,
  records: recordsArea,
  lock: lockArea,
  recovery: recoveryArea,
  rewind: rewindArea,
} satisfies Record<string, ConformanceArea>;

/** An area of the conformance suite, as `runBackendConformance`'s `areas` names it. */
export type ConformanceAreaName = keyof typeof AREAS;

export interface BackendConformanceRun extends BackendConformanceOptions {
  /**
   * The areas to register, e.g. `["log", "lock"]` while those are what you are changing; the others
   * register no test at all. They run in the suite's order whatever the order here. Default: every area.
   * An empty list or an unknown name is INVALID_ARGUMENT (thrown at once, while the file is collected).
   */
  areas?: readonly ConformanceAreaName[];
}

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
 * `areas` keeps the run to some of them (`areas: ["log", "lock"]`); each area is exported on its own too
 * (`runLogConformance(options)` …) for a backend being built area by area. Beyond what `StorageBackend`'s JSDoc
 * states, the suite fixes the error codes callers rely on: a rejected append (a sequence not above the one before)
 * and a write through a released lock are INVALID_ARGUMENT, as is a blob name that is not a lowercase hex sha256 or
 * a record name with a path separator. Optional methods are checked against the required ones; what a crash leaves
 * behind is checked only through the `crashLeftState` and `crashedHolder` hooks, which reach past the interface.
 */
export function runBackendConformance(options: BackendConformanceRun): void {
  runAreas(options, chosenAreas(options.areas));
}

function chosenAreas(names: readonly string[] | undefined): ConformanceArea[] {
  const known = Object.keys(AREAS) as ConformanceAreaName[];
  if (names === undefined) return known.map((name) => AREAS[name]);
  const unknown = names.filter((name) => !Object.hasOwn(AREAS, name));
  if (names.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(
      `runBackendConformance: ${names.length === 0 ? "areas is empty" : `no area named ${unknown.join(", ")}`}; ` +
        `name one or more of ${known.join(", ")}, or leave areas out to run them all.`,
    );
  return known.filter((name) => names.includes(name)).map((name) => AREAS[name]);
}
