// Child process for the two-sessions-on-one-folder test: rewinds its session's files to #1 and undoes that
// rewind, `rounds` times, both with onConflict "overwrite" (so every call writes), while another process does the
// same with another session on the same folder. After each call that changed `shared.txt` it prints
// "op <before> <after>": the file's sha256 the call found (its undo snapshot: what an undo gives back) and the
// one it wrote (its marker's `wrote`). Two writers that interleave lose a write: a value written that no later
// call found and that is not the file's final content. At the end "done <rounds>".
// argv: root sessionId rounds
import { SessionStore, rewind, undoRewind, type RewindPayload } from "../../src/index.js";

const [root, id, roundsText] = process.argv.slice(2);
if (!root || !id || !roundsText) throw new Error("usage: shared-workspace-rewinder root sessionId rounds");
const rounds = Number(roundsText);

const store = new SessionStore({ root });

async function report(markerSequence: number | undefined): Promise<void> {
  if (markerSequence === undefined) return;
  let payload: RewindPayload | undefined;
  for await (const event of store.read(id!, { fromSequence: markerSequence, toSequence: markerSequence }))
    payload = event.payload as RewindPayload;
  if (!payload) throw new Error(`marker #${markerSequence} not on the tape`);
  const before = payload.undo?.files.find((f) => f.path === "shared.txt");
  const after = payload.wrote?.files.find((f) => f.path === "shared.txt");
  if (!before || !after) return; // shared.txt was as wanted already: nothing written
  const was = before.kind === "blob" ? before.blob : before.kind;
  const is = after.kind === "file" ? after.sha256 : after.kind;
  process.stdout.write(`op ${was} ${is}\n`);
}

for (let round = 0; round < rounds; round++) {
  const rewound = await rewind(store, id, { toSequence: 1, mode: "files", onConflict: "overwrite" });
  await report(rewound.markerSequence);
  const undone = await undoRewind(store, id, { onConflict: "overwrite" });
  await report(undone.markerSequence);
}
await store.close();
process.stdout.write(`done ${rounds}\n`);
