import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";

/** The optional methods of the storage seam; a backend may lack any of them, and must say why. */
export type OptionalMethod =
  | "readEventBatches"
  | "sizeOf"
  | "discardPartialWrites"
  | "othersWaiting"
  | "writeBlobs"
  | "writeScanBlobs"
  | "deleteBlobs"
  | "archiveLogAfter";

export interface BackendConformanceOptions {
  /** Shown in the test names, e.g. "fs". */
  name: string;
  /** Makes a fresh, empty backend. Called before every test. */
  create: () => StorageBackend | Promise<StorageBackend>;
  /** Removes what `create` made (temp folders, tables). Called after every test, after `backend.close()`. */
  destroy?: (backend: StorageBackend) => void | Promise<void>;
  /** Runs once before the first test of the suite (start a server, open a pool). */
  beforeAll?: () => void | Promise<void>;
  /** Runs once after the last test of the suite, even when tests failed. */
  afterAll?: () => void | Promise<void>;
  /**
   * The optional methods this backend does not have, each with the reason. The tests that need one are not
   * registered; instead each area registers one test that names what it left out and why, and checks that the
   * backend indeed lacks it. A backend has all of them unless it says so here.
   */
  lacks?: Partial<Record<OptionalMethod, string>>;
  /**
   * Leaves in the backend's storage what a crash leaves (a torn log line, a half-written blob).
   * Without it the crash-left-state checks are not registered; the area's test of what is left out names
   * `crashLeftStateAbsent`, which must then be given.
   */
  crashLeftState?: CrashLeftState;
  /** Why there is no `crashLeftState` hook (e.g. "a crash takes the whole store with it"). */
  crashLeftStateAbsent?: string;
  /**
   * Leaves the session's lock held by a holder that died (e.g. a child process that took the
   * lock and was killed). Without it the stale-lock check is not registered; the lock area's test of what is left
   * out names `crashedHolderAbsent`, which must then be given.
   */
  crashedHolder?: (backend: StorageBackend, sessionId: string) => Promise<void>;
  /** Why there is no `crashedHolder` hook (e.g. "the lock lives and dies with its process"). */
  crashedHolderAbsent?: string;
}

/** Reaches past the interface into the backend's storage, to leave exactly what a crash would. */
export interface CrashLeftState {
  /** Appends `text` to the session's log as it is: no newline added, no checks (a torn or corrupt line). */
  appendToLog(backend: StorageBackend, sessionId: string, text: string): Promise<void>;
  /** Leaves what a blob write cut short by a crash leaves (e.g. a temp file holding part of `bytes`). */
  leavePartialBlob(backend: StorageBackend, sessionId: string, hash: string, bytes: Uint8Array): Promise<void>;
  /** How many leftovers of cut-short blob writes the session holds. */
  countPartialBlobs(backend: StorageBackend, sessionId: string): Promise<number>;
}

/** A hook that reaches past the interface, which a backend's options may leave out. */
type Hook = "crashLeftState" | "crashedHolder";

/** What a test needs that the backend does not offer: an optional method, or a hook of the options. */
type Missing = { method: OptionalMethod; why: string | undefined } | { hook: Hook; why: string | undefined };

/** What every area registers its tests with: the backend of the running test, and the options. */
export class ConformanceSuite {
  private current: StorageBackend | undefined;
  /** What the tests left out since the last {@link takeLeftOut} needed, and how many tests that was. */
  private leftOut = { tests: 0, groups: [] as string[], missing: new Map<string, Missing>() };

  constructor(readonly options: BackendConformanceOptions) {}

  /** The backend made for the running test. */
  get backend(): StorageBackend {
    if (!this.current) throw new Error("The conformance backend is only there while a test runs.");
    return this.current;
  }

  /** Registers the hooks that make and remove a backend around each test (call once, inside the describe). */
  registerHooks(): void {
    const { options } = this;
    if (options.beforeAll) beforeAll(options.beforeAll);
    if (options.afterAll) afterAll(options.afterAll);
    beforeEach(async () => {
      this.current = await options.create();
    });
    afterEach(async () => {
      const backend = this.current;
      this.current = undefined;
      if (!backend) return;
      await backend.close();
      await options.destroy?.(backend);
    });
  }

  /** A test that needs an optional method: registered when the backend has it, left out when it lacks it. */
  withOptional(method: OptionalMethod, name: string, fn: () => Promise<void>): void {
    this.registerIf(this.missingMethods(method), name, fn);
  }

  /** A test that needs the `crashLeftState` hook (and maybe an optional method too). */
  withCrashLeftState(name: string, fn: (crash: CrashLeftState) => Promise<void>, method?: OptionalMethod): void {
    const crash = this.options.crashLeftState;
    const missing = this.missingMethods(method);
    if (!crash) missing.push({ hook: "crashLeftState", why: this.options.crashLeftStateAbsent });
    this.registerIf(missing, name, () => fn(crash!));
  }

  /** A test that needs the `crashedHolder` hook. */
  withCrashedHolder(name: string, fn: (leave: (sessionId: string) => Promise<void>) => Promise<void>): void {
    const hook = this.options.crashedHolder;
    const missing: Missing[] = hook ? [] : [{ hook: "crashedHolder", why: this.options.crashedHolderAbsent }];
    // A stale lock is taken over only after the backend's stale time: give it room.
    this.registerIf(missing, name, () => fn((id) => hook!(this.backend, id)), 60_000);
  }

  /**
   * A group of tests that all need `needs`: a describe when the backend offers them all, left out whole when it
   * does not (a describe left with no test in it is an error to vitest).
   */
  describeNeeding(needs: readonly (OptionalMethod | Hook)[], name: string, fn: () => void): void {
    const missing = needs.flatMap((need): Missing[] =>
      need === "crashLeftState" || need === "crashedHolder"
        ? this.options[need]
          ? []
          : [{ hook: need, why: this.options[`${need}Absent`] }]
        : this.missingMethods(need),
    );
    if (missing.length === 0) {
      describe(name, fn);
      return;
    }
    this.leftOut.groups.push(name);
    for (const m of missing) this.leftOut.missing.set("method" in m ? m.method : m.hook, m);
  }

  /** What the tests and groups left out since the last call needed, forgotten here. */
  takeLeftOut(): { tests: number; groups: string[]; missing: Missing[] } {
    const { tests, groups, missing } = this.leftOut;
    this.leftOut = { tests: 0, groups: [], missing: new Map() };
    return { tests, groups, missing: [...missing.values()] };
  }

  private missingMethods(method: OptionalMethod | undefined): Missing[] {
    const lacks = this.options.lacks ?? {};
    return method !== undefined && method in lacks ? [{ method, why: lacks[method] }] : [];
  }

  private registerIf(missing: Missing[], name: string, fn: () => Promise<void>, timeout?: number): void {
    if (missing.length === 0) {
      it(name, fn, timeout);
      return;
    }
    this.leftOut.tests++;
    for (const m of missing) this.leftOut.missing.set("method" in m ? m.method : m.hook, m);
  }
}

/**
 * Registers, when an area left tests out, the one test that says what of the backend they needed and checks
 * that the backend indeed lacks each optional method named (a backend that gains one must run its tests) and
 * that each missing hook has its reason.
 */
function registerLeftOut(suite: ConformanceSuite): void {
  const { tests, groups, missing } = suite.takeLeftOut();
  if (tests === 0 && groups.length === 0) return;
  const what = [
    ...(tests > 0 ? [`${tests} test(s)`] : []),
    ...(groups.length > 0 ? [`the tests of ${groups.map((g) => `"${g}"`).join(", ")}`] : []),
  ];
  const named = missing.map(
    (m) => `${"method" in m ? m.method : `the ${m.hook} hook`} (${m.why ?? "no reason given"})`,
  );
  it(`${what.join(" and ")} left out, needing what this backend does not offer: ${named.join("; ")}`, async () => {
    const methods = missing.flatMap((m) => ("method" in m ? [m.method] : []));
    const present = methods.length > 0 ? await optionalMethodsOf(suite.backend, "left-out") : undefined;
    for (const method of methods)
      expect(present?.[method], `${method} is there: take it out of \`lacks\` so its tests run`).toBe(false);
    for (const m of missing)
      if ("hook" in m)
        expect(m.why, `no ${m.hook} hook: say why in ${m.hook}Absent`).toEqual(expect.stringMatching(/\S/));
  });
}

/** Which optional methods the backend has, looked at on a session it creates (and a lock it takes) for this. */
export async function optionalMethodsOf(
  backend: StorageBackend,
  sessionId: string,
): Promise<Record<OptionalMethod, boolean>> {
  await backend.createSession({ id: sessionId, createdAt: new Date().toISOString() });
  const locked = await backend.lock(sessionId);
  try {
    return {
      readEventBatches: typeof backend.readEventBatches === "function",
      sizeOf: typeof backend.sizeOf === "function",
      discardPartialWrites: typeof locked.discardPartialWrites === "function",
      othersWaiting: typeof locked.othersWaiting === "function",
      writeBlobs: typeof locked.writeBlobs === "function",
      writeScanBlobs: typeof locked.writeScanBlobs === "function",
      deleteBlobs: typeof locked.deleteBlobs === "function",
      archiveLogAfter: typeof locked.archiveLogAfter === "function" && typeof backend.readArchivedLog === "function",
    };
  } finally {
    await locked.release();
  }
}

/** One area of the suite: registers its tests (describe / it) with the suite. */
export type ConformanceArea = (suite: ConformanceSuite) => void;

/** Registers `areas` under one describe named after the backend, with one backend per test. */
export function runAreas(options: BackendConformanceOptions, areas: readonly ConformanceArea[]): void {
  describe(`storage backend conformance: ${options.name}`, () => {
    const suite = new ConformanceSuite(options);
    suite.registerHooks();
    for (const area of areas) {
      area(suite);
      registerLeftOut(suite);
    }
  });
}
