// Child process for the big-batch crash test: appends events first..last as one batch the way an undo puts a
// cut back (LockedSession.appendStream, a 64 KB write at a time), then prints "done". The parent kills it
// with SIGKILL while the log grows, leaving an unfinished batch at the log's end.
// argv: root sessionId first last
// Prints "writing" once it holds the lock, before the first line is written.
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { eventsFrom } from "../helpers/big-batch.js";

const [root, id, first, last] = process.argv.slice(2);
if (!root || !id || !first || !last) throw new Error("usage: stream-appender root sessionId first last");
const backend = fsBackend({ root, lockStaleMs: 2000 });
const locked = await backend.lock(id);
process.stdout.write("writing\n");
const batch = { first: Number(first), last: Number(last) };
await locked.appendStream!(eventsFrom(id, batch.first, batch.last), batch, { sync: false });
await locked.release();
await backend.close();
process.stdout.write("done\n");
