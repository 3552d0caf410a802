import {
  VERIFY_NEVER_CHECKS,
  verify,
  type VerifyProgress,
  type VerifyReport,
  isAgentTapeError,
  SessionNotFoundError,
} from "../../index.js";
import { optionalSessionId, printJson, printLine, type CliContext, type Command } from "../command.js";
import { plural } from "../output.js";

export const verifyCommand: Command = {
  name: "verify",
  usage: "verify [<id>]",
  summary: "Check every line, sequence and blob hash; exit 1 on any problem",
  help: `Checks one session, or every session under the root: every line of the tape parses,
sequences strictly increase, every side record reads, and every before-snapshot blob an
event (or a rewind archive) refers to exists and still matches its sha256. Reads past
damage to list every problem, each with the line or the event that names it, and a
session.json whose workspace is not the one the tape's snapshots were taken in. Under a
session it prints what it could not check there (a workspace no snapshot records, a
pending rewind's before-state); never checked anywhere: ${VERIFY_NEVER_CHECKS.join("; ")}.
Changes nothing and takes no lock. Exits 1 when anything is wrong, 0 when all is well.`,
  options: {},

  async run(ctx, args) {
    const only = optionalSessionId("verify", args);
    const store = ctx.store();
    const ids = only !== undefined ? [only] : (await store.backend.listSessionIds()).sort();
    const reports: VerifyReport[] = [];
    for (const [i, id] of ids.entries()) {
      const where = ids.length > 1 ? `session ${i + 1}/${ids.length} ${id}` : id;
      const onProgress = (p: VerifyProgress) => ctx.progress.update(`verify ${where}: ${progressText(p)}`);
      const report = await verify(store, id, { onProgress }).catch((error: unknown) => {
        // Listed from the root, a stray folder is not a session; one named on the command line is an error.
        const notASession =
          isAgentTapeError(error, "SESSION_NOT_FOUND") || isAgentTapeError(error, "INVALID_SESSION_ID");
        if (only === undefined && notASession) return undefined;
        throw error;
      });
      if (report) reports.push(report);
    }
    ctx.progress.clear();
    if (only !== undefined && reports.length === 0) throw new SessionNotFoundError(only);
    const bad = reports.filter((v) => !v.ok);

    if (ctx.json) {
      printJson(ctx, {
        ok: bad.length === 0,
        sessions: reports.map(({ sessionId, ...rest }) => ({ id: sessionId, ...rest })),
      });
      return bad.length > 0 ? 1 : 0;
    }
    printReports(ctx, reports);
    return bad.length > 0 ? 1 : 0;
  },
};

function progressText(p: VerifyProgress): string {
  return p.blobsToCheck === 0 ? `${p.eventsRead} events read` : `${p.blobsChecked}/${p.blobsToCheck} blobs checked`;
}

function printReports(ctx: CliContext, reports: readonly VerifyReport[]): void {
  if (reports.length === 0) {
    printLine(ctx.stdout, `No sessions under ${ctx.root}.`);
    return;
  }
  const { style } = ctx;
  for (const v of reports) {
    const counts = `${plural(v.events, "event")}, ${plural(v.blobsChecked, "blob")}`;
    if (v.ok) printLine(ctx.stdout, `${style.green("ok")}    ${v.sessionId}  ${counts}`);
    else {
      printLine(
        ctx.stdout,
        `${style.red("FAIL")}  ${v.sessionId}  ${counts}: ${style.red(plural(v.problems.length, "problem"))}`,
      );
      for (const p of v.problems) printLine(ctx.stdout, `      ${p.message}`);
    }
    // What every session leaves unchecked is in the help; what this one does is said here.
    for (const what of v.notChecked)
      if (!VERIFY_NEVER_CHECKS.includes(what)) printLine(ctx.stdout, `      not checked: ${what}`);
  }
  const bad = reports.filter((v) => !v.ok);
  if (bad.length === 0)
    printLine(ctx.stdout, `${reports.length === 1 ? "The session is" : `All ${reports.length} sessions are`} intact.`);
  else
    printLine(
      ctx.stdout,
      `${bad.length} of ${plural(reports.length, "session")} ${bad.length === 1 ? "has" : "have"} problems.`,
    );
}
