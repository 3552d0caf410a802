import { createHash } from "node:crypto";
import type { ArchivedLog, SignalOption, StorageBackend } from "../backend/types.js";
import { parseEventLine, rememberPayloadJson } from "../core/envelope.js";
import { StoreTamperedError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { signalOf } from "../core/defined-fields.js";

/**
 * The events a rewind cut from the log, kept beside it so `undoRewind` can put them back.
 * Named after the marker that removed them; the newest `keepUndo` are kept (docs/ARCHITECTURE.md, "Blobs").
 * Two forms: `log`, the cut bytes copied from the log as they were (`records/<name>.jsonl`, checked against
 * their length and sha256 here, and in the marker's `undo.archiveLog`), never parsed or held whole; or
 * `events`, the form written before byte-range archives (and by backends that cannot copy a range).
 */
export interface RewindArchive {
  markerSequence: number;
  events?: StoredEvent[];
  log?: ArchivedLog;
}

const PREFIX = "rewind-archive-";

export function archiveName(markerSequence: number): string {
  return `${PREFIX}${markerSequence}`;
}

/** Whether a side record's name is a rewind archive's. */
export function isArchiveName(name: string): boolean {
  return name.startsWith(PREFIX);
}

/** Names of the archives a session holds, newest (highest marker) first. */
export async function listArchives(backend: StorageBackend, sessionId: string): Promise<string[]> {
  const names = (await backend.listRecords(sessionId)).filter((n) => n.startsWith(PREFIX));
  return names.sort((a, b) => Number(b.slice(PREFIX.length)) - Number(a.slice(PREFIX.length)));
}

export async function readArchive(
  backend: StorageBackend,
  sessionId: string,
  name: string,
): Promise<RewindArchive | undefined> {
  return (await backend.readRecord(sessionId, name)) as RewindArchive | undefined;
}

/** Whether a record read as an archive has one of the two forms (verify names the ones that do not). */
export function isArchiveShape(value: unknown): value is RewindArchive {
  if (typeof value !== "object" || value === null) return false;
  const archive = value as RewindArchive;
  return Array.isArray(archive.events) || isArchivedLog(archive.log);
}

export function isArchivedLog(value: unknown): value is ArchivedLog {
  const log = value as ArchivedLog | undefined;
  return (
    typeof log === "object" &&
    log !== null &&
    Number.isSafeInteger(log.bytes) &&
    log.bytes >= 0 &&
    Number.isSafeInteger(log.events) &&
    log.events >= 0 &&
    typeof log.sha256 === "string" &&
    /^[0-9a-f]{64}$/.test(log.sha256)
  );
}

/**
 * The archive's events in order, streamed: from its copied log bytes (parsed a line at a time, memory flat
 * however long the cut) or from the events of an older archive. The bytes are hashed as they go by; bytes
 * that are not what `log` says (a length, a sha256, a line count, a line that is no event of this session)
 * are STORE_TAMPERED, thrown after the last event at the latest, so a caller that must act on none of an
 * altered archive (undo's append) writes what it is given only as one batch it can take back.
 */
export async function* archivedEvents(
  backend: StorageBackend,
  sessionId: string,
  name: string,
  archive: RewindArchive,
  options: SignalOption & {
    /**
     * Leave each payload as the JSON text the line holds (remembered for serializeEvent; `payload` is null):
     * for a caller that only writes the events again (undo's append), which then builds no payload objects
     * and stringifies none. A line whose envelope is not in the written order is parsed whole.
     */
    payloadAsText?: boolean;
  } = {},
): AsyncGenerator<StoredEvent> {
  if (archive.log === undefined) {
    yield* archive.events ?? [];
    return;
  }
  const expected = archive.log;
  const tampered = (what: string) => new StoreTamperedError(sessionId, `records/${name}.jsonl ${what}`);
  if (!backend.readArchivedLog) throw tampered("is a byte-range archive, which this backend cannot read");
  const hash = createHash("sha256");
  let bytes = 0;
  let events = 0;
  let previous = 0;
  let carry: Buffer[] = [];
  const parse = options.payloadAsText ? parseKeepingPayloadText : parseEventLine;
  const signal = signalOf(options);
  for await (const chunk of backend.readArchivedLog(sessionId, name, signal)) {
    hash.update(chunk);
    bytes += chunk.length;
    if (bytes > expected.bytes) throw tampered(`holds more than the ${expected.bytes} bytes archived`);
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      let text: string;
      if (carry.length === 0) text = chunk.toString("utf8", start, nl);
      else {
        carry.push(chunk.subarray(start, nl));
        text = Buffer.concat(carry).toString("utf8");
        carry = []; // only here: a new array per line would be garbage on every line
      }
      start = nl + 1;
      const event = parse(text);
      events++;
      if (typeof event === "string") throw tampered(`line ${events} is not an event (${event})`);
      if (event.sessionId !== sessionId || event.sequence <= previous)
        throw tampered(`line ${events} is not an event of this session in sequence`);
      previous = event.sequence;
      yield event;
    }
    if (start < chunk.length) carry.push(Buffer.from(chunk.subarray(start))); // a copy: the chunk is read into again
  }
  if (carry.length > 0 || bytes !== expected.bytes || events !== expected.events)
    throw tampered(
      `holds ${bytes} bytes in ${events} lines where ${expected.bytes} in ${expected.events} were archived`,
    );
  if (hash.digest("hex") !== expected.sha256) throw tampered("does not hold the bytes archived (sha256)");
}

const PAYLOAD_KEY = ',"payload":';

/**
 * A line parsed but for its payload, which stays the text it is (see `payloadAsText`). The envelope is always
 * written in one order with the payload last (src/core/envelope.ts), and `,"payload":` cannot occur inside a
 * JSON string before it (its quotes would be escaped), so the first one is the key. The bytes are checked
 * against the archive's sha256 by the end of the read, so a payload text is never written unchecked.
 */
function parseKeepingPayloadText(text: string): StoredEvent | string {
  const at = text.indexOf(PAYLOAD_KEY);
  if (at === -1 || !text.endsWith("}")) return parseEventLine(text);
  const event = parseEventLine(`${text.slice(0, at)}${PAYLOAD_KEY}null}`);
  if (typeof event !== "string") rememberPayloadJson(event, text.slice(at + PAYLOAD_KEY.length, -1));
  return event;
}
