// The conflict check of a files rewind used to fold the whole tape. Now the events after the target decide
// every path they name (conflicts.ts, lastWrittenStates), and the whole tape is folded only for a path they
// do not name. Checked two ways: a real rewind on a long tape reads a small part of it and still finds the
// hand edit; and on random tapes, whatever the tail decides equals what the whole fold decides.
import { readFile, realpath, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError, rewind, type StoredEvent } from "../../src/index.js";
import { LastWritten, lastWrittenStates } from "../../src/rewind/conflicts.js";
import { bytesRead } from "../helpers/bytes-read.js";
import { put } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { appendMessages } from "../helpers/long-tape.js";

describe("a files rewind's conflict check reads what it cuts", () => {
  it("a long tape, the last edit rewound: a few KB read, and a hand edit is still refused", async () => {
    const base = await realpath(await tempDir("agent-tape-conflict-cost-"));
    const workspace = join(base, "ws");
    await put(workspace, "notes.md", "v0\n");
    const store = openStore({ root: join(base, "sessions"), durability: "none" });
    const checkpoints = new CheckpointStore(store);
    const { id } = await store.create({ workspace });
    // notes.md written early by the agent, then a long conversation, then the edit that is rewound.
    await checkpoints.around(id, { tool: "edit", paths: ["notes.md"] }, () =>
      writeFile(join(workspace, "notes.md"), "v1\n"),
    );
    await appendMessages(store, id, 20_000, { bytes: 400, batch: 2000 });
    const target = (await store.append(id, { type: "message", payload: { role: "user", content: "the target" } }))
      .sequence;
    await checkpoints.around(id, { tool: "edit", paths: ["notes.md"] }, () =>
      writeFile(join(workspace, "notes.md"), "v2\n"),
    );
    const logBytes = (await stat(join(base, "sessions", id, "events.jsonl"))).size;

    await writeFile(join(workspace, "notes.md"), "v2 and a hand edit\n");
    const before = await bytesRead();
    const refused = await rewind(store, id, { toSequence: target, mode: "files" }).catch((error: unknown) => error);
    expect(isAgentTapeError(refused, "REWIND_CONFLICT"), String(refused)).toBe(true);
    // a whole-log read is >= 1; the rest is headroom (bytes-read.ts)
    expect(((await bytesRead()) - before) / logBytes).toBeLessThan(0.1);

    await writeFile(join(workspace, "notes.md"), "v2\n");
    const report = await rewind(store, id, { toSequence: target, mode: "files" });
    expect(report.filesRestored).toBe(1);
    expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("v1\n");
  }, 60_000);
});

const WS = "/ws";
const PATHS = ["a", "a/b", "a/b/c", "a/d", "e"];
const state = fc.oneof(
  fc.constant({ kind: "absent" as const }),
  fc.record({
    kind: fc.constant("file" as const),
    sha256: fc.constantFrom("1".repeat(64), "2".repeat(64)),
    mode: fc.constant(0o644),
  }),
  fc.record({ kind: fc.constant("directory" as const), mode: fc.constant(0o755) }),
  fc.constant({ kind: "unknown" as const, reason: "unreadable" }),
);
/** One event that sets states: an after-state, a checkpoint (unknown until its after-state), or a rewind marker. */
const event = fc.oneof(
  fc.array(fc.record({ path: fc.constantFrom(...PATHS), state }), { minLength: 1, maxLength: 3 }).map((files) => ({
    type: "session_file_states",
    payload: { workspace: WS, files: files.map((f) => ({ path: f.path, ...f.state })) },
  })),
  fc.array(fc.constantFrom(...PATHS), { minLength: 1, maxLength: 3 }).map((paths) => ({
    type: "session_checkpoint",
    payload: { tool: "edit", workspace: WS, files: paths.map((path) => ({ path, kind: "absent" })) },
  })),
  fc
    .array(fc.record({ path: fc.constantFrom(...PATHS), state, skip: fc.boolean() }), { minLength: 1, maxLength: 3 })
    .map((changes) => ({
      type: "session_rewind",
      payload: {
        targetSequence: 0,
        mode: "files",
        filesRestored: 0,
        filesDeleted: 0,
        skipped: [],
        eventsRemoved: 0,
        blobsPruned: 0,
        changes: changes.map((c) => ({ path: c.path, action: c.skip ? "skip" : "restore" })),
        wrote: { workspace: WS, files: changes.map((c) => ({ path: c.path, ...c.state })) },
      },
    })),
);

describe("lastWrittenStates: what the tail decides is what the whole tape decides", () => {
  it("on random tapes split at random points, for every path", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(event, { maxLength: 12 }), fc.nat(), async (shapes, cutAt) => {
        const events = shapes.map((shape, i) => ({ ...shape, sequence: i + 1 }) as unknown as StoredEvent);
        const split = events.length === 0 ? 0 : cutAt % (events.length + 1);
        const whole = new LastWritten();
        for (const e of events) whole.add(e);
        const expected = whole.in(WS);
        for (const path of PATHS) {
          const got = await lastWrittenStates(
            async function* () {
              yield* events.slice(0, split);
            },
            events.slice(split),
            WS,
            [path],
          );
          expect(got.get(path)).toEqual(expected.get(path));
        }
      }),
      { numRuns: 500 },
    );
  });
});
