import { CheckpointStore } from "../../checkpoint/checkpoint-store.js";
import { SessionNotFoundError, isAgentTapeError, type BlobCorruptError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { referencedBlobs, snapshotsIn } from "../../blobs/references.js";
import { listArchives, readArchive } from "../../blobs/archives.js";
import { forEachLimited } from "../../core/bounded-concurrency.js";
import { errorSummary, optionalSessionId, printJson, printLine, type CliContext, type Command } from "../command.js";
import { plural } from "../output.js";

type ProblemKind =
  | "metadata_unreadable"
  | "log_unreadable"
  | "corrupt_line"
  | "archive_unreadable"
  | "blob_missing"
  | "blob_corrupt"
  | "blob_unreadable";

interface Problem {
  kind: ProblemKind;
  /** Says what is wrong and where, for a person. */
  message: string;
  /** 1-based line of events.jsonl (corrupt_line). */
  line?: number;
  hash?: string;
  /** The first event that points at the blob. */
  referencedBy?: string;
}

interface SessionVerdict {
  id: string;
  ok: boolean;
  /** Events that parsed. */
  events: number;
  blobsChecked: number;
  problems: Problem[];
}

export const verifyCommand: Command = {
  name: "verify",
  usage: "verify [<id>]",
  summary: "Check every line, sequence and blob hash; exit 1 on any problem",
  help: `Checks one session, or every session under the root: every line of the tape parses,
sequences strictly increase, and every before-snapshot blob an event (or a rewind
archive) refers to exists and still matches its sha256. Reads past damage to list
every problem, each with the line or the event that names it. Changes nothing and
takes no lock. Exits 1 when anything is wrong, 0 when all is well.`,
  options: {},

  async run(ctx, args) {
    const only = optionalSessionId("verify", args);
    const store = ctx.store();
    const ids = only !== undefined ? [only] : (await store.backend.listSessionIds()).sort();
    const verdicts: SessionVerdict[] = [];
    for (const [i, id] of ids.entries()) {
      const where = ids.length > 1 ? `session ${i + 1}/${ids.length} ${id}` : id;
      const verdict = await verifySession(ctx, id, (text) => ctx.progress.update(`verify ${where}: ${text}`));
      if (verdict) verdicts.push(verdict);
      else if (only !== undefined) throw new SessionNotFoundError(id);
    }
    ctx.progress.clear();
    const bad = verdicts.filter((v) => !v.ok);

    if (ctx.json) {
      printJson(ctx, { ok: bad.length === 0, sessions: verdicts });
      return bad.length > 0 ? 1 : 0;
    }
    if (verdicts.length === 0) {
      printLine(ctx.stdout, `No sessions under ${ctx.root}.`);
      return 0;
    }
    const { style } = ctx;
    for (const v of verdicts) {
      const counts = `${plural(v.events, "event")}, ${plural(v.blobsChecked, "blob")}`;
      if (v.ok) {
        printLine(ctx.stdout, `${style.green("ok")}    ${v.id}  ${counts}`);
        continue;
      }
      printLine(
        ctx.stdout,
        `${style.red("FAIL")}  ${v.id}  ${counts}: ${style.red(plural(v.problems.length, "problem"))}`,
      );
      for (const p of v.problems) printLine(ctx.stdout, `      ${p.message}`);
    }
    if (bad.length === 0)
      printLine(
        ctx.stdout,
        `${verdicts.length === 1 ? "The session is" : `All ${verdicts.length} sessions are`} intact.`,
      );
    else
      printLine(
        ctx.stdout,
        `${bad.length} of ${plural(verdicts.length, "session")} ${bad.length === 1 ? "has" : "have"} problems.`,
      );
    return bad.length > 0 ? 1 : 0;
  },
};

/** Undefined when `id` names no session (a stray folder under the root). */
async function verifySession(
  ctx: CliContext,
  id: string,
  progress: (text: string) => void,
): Promise<SessionVerdict | undefined> {
  const store = ctx.store();
  const backend = store.backend;
  const problems: Problem[] = [];

  try {
    if ((await backend.getSession(id)) === undefined) return undefined;
  } catch (error) {
    if (isAgentTapeError(error, "INVALID_SESSION_ID")) return undefined;
    problems.push({
      kind: "metadata_unreadable",
      message: `session.json cannot be read: ${errorSummary(error).message}`,
    });
  }

  // Streamed rather than store.salvage(): same skip-and-report of bad lines, flat memory on a long tape.
  const firstReference = new Map<string, string>();
  const note = (event: StoredEvent, where: string) => {
    const hashes = referencedBlobs([event]);
    for (const file of snapshotsIn(event)) {
      if (file.kind !== "blob" || !hashes.has(file.blob) || firstReference.has(file.blob)) continue;
      firstReference.set(
        file.blob,
        `${file.path}, ${event.type === "session_rewind" ? "rewind" : "checkpoint"} #${event.sequence}${where}`,
      );
    }
    for (const hash of hashes)
      if (!firstReference.has(hash)) firstReference.set(hash, `event #${event.sequence}${where}`);
  };
  let events = 0;
  try {
    const source = backend.readEvents(id, {
      onCorrupt: (bad) =>
        problems.push({
          kind: "corrupt_line",
          line: bad.line,
          message: `events.jsonl line ${bad.line}: ${bad.reason}`,
        }),
    });
    for await (const event of source) {
      events++;
      note(event, "");
      if (events % 1000 === 0) progress(`${events} events read`);
    }
  } catch (error) {
    const summary = errorSummary(error);
    problems.push({
      kind: "log_unreadable",
      message: `events.jsonl cannot be read: ${summary.message} (${summary.code})`,
    });
  }

  // An archive's blobs are kept for undo, so they must be sound too.
  try {
    for (const name of await listArchives(backend, id)) {
      try {
        for (const event of (await readArchive(backend, id, name))?.events ?? []) note(event, ` in ${name}`);
      } catch (error) {
        problems.push({
          kind: "archive_unreadable",
          message: `rewind archive ${name} cannot be read: ${errorSummary(error).message}`,
        });
      }
    }
  } catch (error) {
    problems.push({
      kind: "archive_unreadable",
      message: `rewind archives cannot be listed: ${errorSummary(error).message}`,
    });
  }

  const checkpoints = new CheckpointStore(store);
  const hashes = [...firstReference.keys()];
  const blobProblems = new Map<string, Problem>();
  let checked = 0;
  await forEachLimited(hashes, 8, async (hash) => {
    const referencedBy = firstReference.get(hash)!;
    try {
      await checkpoints.readBlob(id, hash);
    } catch (error) {
      blobProblems.set(hash, blobProblem(hash, referencedBy, error));
    }
    progress(`${++checked}/${hashes.length} blobs checked`);
  });
  // Parallel checks finish in any order; report in the order the tape names the blobs.
  for (const hash of hashes) {
    const problem = blobProblems.get(hash);
    if (problem) problems.push(problem);
  }
  return { id, ok: problems.length === 0, events, blobsChecked: hashes.length, problems };
}

function blobProblem(hash: string, referencedBy: string, error: unknown): Problem {
  const at = `(${referencedBy})`;
  if (isAgentTapeError(error, "BLOB_NOT_FOUND"))
    return { kind: "blob_missing", hash, referencedBy, message: `blob ${hash} is missing ${at}` };
  if (isAgentTapeError(error, "BLOB_CORRUPT")) {
    const actual = (error as BlobCorruptError).actual;
    return {
      kind: "blob_corrupt",
      hash,
      referencedBy,
      message: `blob ${hash} is damaged: its bytes hash to ${actual} ${at}`,
    };
  }
  const summary = errorSummary(error);
  return {
    kind: "blob_unreadable",
    hash,
    referencedBy,
    message: `blob ${hash} cannot be read: ${summary.message} ${at}`,
  };
}
