import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { StorageBackend } from "../../src/backend/types.js";
import type { EventSchemas, SessionStoreOptions } from "../../src/index.js";

/**
 * Where the stores the fixture (test/helpers/fixture.ts) opens on a `root` keep their sessions: the fs backend
 * on that folder, unless a file that runs the suites on another backend said otherwise before importing them
 * (test/helpers/stores-on-postgres.ts). A store given its own `backend` keeps it. The workspace is this
 * machine's disk either way.
 */
export interface StoreBackends {
  kind: "fs" | "postgres";
  /** The backend for the store folder `root`: the same `root` reaches the same sessions. */
  on?: (root: string) => StorageBackend;
  /** What a test reads or damages by hand where the backend keeps it, for a backend other than fs. */
  byHand?: ByHand;
  /** The CLI's flags that reach the store folder `root` (`--store postgres://…`). */
  cliStore?: (root: string) => string[];
}

/** A session's stored parts, reached past the backend (no lock, no recovery): to look at or damage on purpose. */
export interface ByHand {
  /** The session's log as the fs backend's file would hold it (its lines, each ended by "\n"). */
  logBytes(root: string, id: string): Promise<Buffer>;
  /** Whether the blob is stored at all. */
  blobIsStored(root: string, id: string, hash: string): Promise<boolean>;
  /** Replaces the blob's stored bytes by `bytes`. */
  damageBlob(root: string, id: string, hash: string, bytes: string): Promise<void>;
  /** Loses the blob. */
  removeBlob(root: string, id: string, hash: string): Promise<void>;
  /** The hashes of the blobs stored. */
  blobHashes(root: string, id: string): Promise<string[]>;
  /** Replaces the text of the log's line `sequence` by `line`. */
  setLine(root: string, id: string, sequence: number, line: string): Promise<void>;
  /** A side record's stored text, undefined when there is none. */
  recordText(root: string, id: string, name: string): Promise<string | undefined>;
  /** Stores `text` as the side record's text, as a hand edit or a planted record would. */
  setRecordText(root: string, id: string, name: string, text: string): Promise<void>;
  /** The session's own record (session.json on fs), as stored. */
  sessionText(root: string, id: string): Promise<string>;
  /** Stores `text` as the session's own record, as a hand edit would. */
  setSessionText(root: string, id: string, text: string): Promise<void>;
}

let backends: StoreBackends = { kind: "fs" };

/** Stores opened on a `root` from now on keep their sessions where `chosen` says. */
export function storesOn(chosen: Required<StoreBackends>): void {
  backends = chosen;
}

/** The backend the stores of this file keep their sessions in. */
export function storeBackendKind(): StoreBackends["kind"] {
  return backends.kind;
}

/**
 * Defines the tests of `suite` only where the stores are on the fs backend: for tests about a fact of that
 * backend (its files, their modes, its syscalls), said in `why`.
 */
export function onFsOnly(why: string, suite: () => void): void {
  if (why.trim() === "") throw new Error("onFsOnly needs the fs-only fact the tests are about");
  if (backends.kind === "fs") suite();
}

/** The chosen backend's way to reach a session's stored parts by hand; undefined on fs (the callers read files). */
export function byHand(): ByHand | undefined {
  return backends.byHand;
}

/** The session's log as bytes, read directly (no lock, no recovery): the file on fs, the rows' lines elsewhere. */
export function storedLogBytes(root: string, id: string): Promise<Buffer> {
  return backends.byHand ? backends.byHand.logBytes(root, id) : readFile(join(root, id, "events.jsonl"));
}

/** A backend of the chosen kind for the store folder `root`; the caller closes it. */
export function chosenBackendOn(root: string): StorageBackend {
  if (backends.on === undefined) throw new Error("the stores are on the fs backend here: open it on the root");
  return backends.on(root);
}

/** `options` with `root` turned into the chosen backend (given to `closeAfter`, so closed after the store). */
export function onChosenBackend<E extends EventSchemas>(
  options: SessionStoreOptions<E>,
  closeAfter: <T extends { close(): Promise<void> | void }>(closable: T) => T,
): SessionStoreOptions<E> {
  const { on } = backends;
  if (on === undefined || options.backend !== undefined || options.root === undefined) return options;
  const { root, lockStaleMs: _fsOnly, ...rest } = options;
  return { ...rest, backend: closeAfter(on(root)) };
}

/** The CLI's flags that reach the store folder `root` on the chosen backend: `--root` on fs. */
export function cliStore(root: string): string[] {
  return backends.cliStore ? backends.cliStore(root) : ["--root", root];
}

/** A side record's stored text (records/<name>.json on fs), read directly; undefined when there is none. */
export async function storedRecordText(root: string, id: string, name: string): Promise<string | undefined> {
  if (backends.byHand) return backends.byHand.recordText(root, id, name);
  return readFile(join(root, id, "records", `${name}.json`), "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
}

/** Stores `text` as a side record by hand (records/<name>.json on fs), as a hand edit or a planted record would. */
export async function setStoredRecordText(root: string, id: string, name: string, text: string): Promise<void> {
  if (backends.byHand) return backends.byHand.setRecordText(root, id, name, text);
  await mkdir(join(root, id, "records"), { recursive: true });
  await writeFile(join(root, id, "records", `${name}.json`), text);
}

/** Rewrites the session's own record (session.json on fs) by hand: `edit` gets its parsed JSON. */
export async function editSessionRecord(
  root: string,
  id: string,
  edit: (record: Record<string, unknown>) => Record<string, unknown>,
): Promise<void> {
  const other = backends.byHand;
  const file = join(root, id, "session.json");
  const text = other ? await other.sessionText(root, id) : await readFile(file, "utf8");
  const edited = JSON.stringify(edit(JSON.parse(text)));
  await (other ? other.setSessionText(root, id, edited) : writeFile(file, edited));
}

/** Rewrites each line of the session's log by hand (events.jsonl on fs): `edit` gets a line's text (no "\n"). */
export async function editLogLines(
  root: string,
  id: string,
  edit: (line: string, index: number) => string,
): Promise<void> {
  const lines = (await storedLogBytes(root, id)).toString("utf8").split("\n");
  const edited = lines.map(edit);
  const other = backends.byHand;
  if (other === undefined) return writeFile(join(root, id, "events.jsonl"), edited.join("\n"));
  for (const [index, line] of edited.entries())
    if (line !== lines[index]) await other.setLine(root, id, index + 1, line);
}
