import { afterAll, afterEach, beforeAll, beforeEach, describe, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";

/** The optional methods of the storage seam; a backend may lack any of them, and must say why. */
export type OptionalMethod =
  | "readEventBatches"
  | "sizeOf"
  | "discardPartialWrites"
  | "othersWaiting"
  | "writeBlobs"
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
   * The optional methods this backend does not have, each with the reason (shown in the name of
   * every test it skips). A backend has all of them unless it says so here; a test checks that
   * this list is true.
   */
  lacks?: Partial<Record<OptionalMethod, string>>;
  /**
   * Leaves in the backend's storage what a crash leaves (a torn log line, a half-written blob).
   * Without it the crash-left-state checks are skipped, named with `crashLeftStateAbsent`.
   */
  crashLeftState?: CrashLeftState;
  /** Why there is no `crashLeftState` hook (e.g. "a crash takes the whole store with it"). */
  crashLeftStateAbsent?: string;
  /**
   * Leaves the session's lock held by a holder that died (e.g. a child process that took the
   * lock and was killed). Without it the stale-lock check is skipped, named with `crashedHolderAbsent`.
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

/** What every area registers its tests with: the backend of the running test, and the options. */
export class ConformanceSuite {
  private current: StorageBackend | undefined;

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

  /**
   * A test that needs an optional method: registered under its name when the backend has it,
   * skipped under a name that says which method is missing and why when it declared it lacks it.
   */
  withOptional(method: OptionalMethod, name: string, fn: () => Promise<void>): void {
    const reason = this.options.lacks?.[method];
    this.conditional(reason === undefined, name, `${this.options.name} has no ${method}: ${reason}`, fn);
  }

  /** A test that needs the `crashLeftState` hook (and maybe an optional method too). */
  withCrashLeftState(name: string, fn: (crash: CrashLeftState) => Promise<void>, method?: OptionalMethod): void {
    const crash = this.options.crashLeftState;
    const missingMethod = method === undefined ? undefined : this.options.lacks?.[method];
    const why = !crash
      ? `no crashLeftState hook for ${this.options.name}: ${this.options.crashLeftStateAbsent ?? "none given"}`
      : `${this.options.name} has no ${method}: ${missingMethod}`;
    this.conditional(crash !== undefined && missingMethod === undefined, name, why, () => fn(crash!));
  }

  /** A test that needs the `crashedHolder` hook. */
  withCrashedHolder(name: string, fn: (leave: (sessionId: string) => Promise<void>) => Promise<void>): void {
    const hook = this.options.crashedHolder;
    const why = `no crashedHolder hook for ${this.options.name}: ${this.options.crashedHolderAbsent ?? "none given"}`;
    // A stale lock is taken over only after the backend's stale time: give it room.
    this.conditional(hook !== undefined, name, why, () => fn((id) => hook!(this.backend, id)), 60_000);
  }

  private conditional(present: boolean, name: string, whyNot: string, fn: () => Promise<void>, timeout?: number): void {
    it.runIf(present)(present ? name : `${name} (skipped: ${whyNot})`, fn, timeout);
  }
}

/** One area of the suite: registers its tests (describe / it) with the suite. */
export type ConformanceArea = (suite: ConformanceSuite) => void;

/** Registers `areas` under one describe named after the backend, with one backend per test. */
export function runAreas(options: BackendConformanceOptions, areas: readonly ConformanceArea[]): void {
  describe(`storage backend conformance: ${options.name}`, () => {
    const suite = new ConformanceSuite(options);
    suite.registerHooks();
    for (const area of areas) area(suite);
  });
}
