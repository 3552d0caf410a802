// Child for test/backend/fs-os-errors.process.test.ts: started under a low `ulimit -n`, it appends to
// many sessions at once (each append holds its log open), and prints the errors met, as
// { codes: { "<code or error name>": count }, osCodes: [...], ok: n }.
import { SessionStore, isAgentTapeError } from "../../src/index.js";

const [root, count] = process.argv.slice(2);
if (!root || !count) throw new Error("usage: open-many-sessions root count");
const store = new SessionStore({ root, durability: "none" });
const codes: Record<string, number> = {};
const osCodes = new Set<string>();
let ok = 0;
const ids: string[] = [];
for (let i = 0; i < Number(count); i++) ids.push((await store.create({ id: `s${i}` })).id);
await Promise.all(
  ids.map((id) =>
    store.append(id, { type: "message", payload: { role: "user", content: "hi" } }).then(
      () => ok++,
      (error: unknown) => {
        const code = isAgentTapeError(error) ? error.code : `raw ${(error as NodeJS.ErrnoException).code ?? error}`;
        codes[code] = (codes[code] ?? 0) + 1;
        const os = isAgentTapeError(error) && "osCode" in error ? error.osCode : undefined;
        if (os) osCodes.add(os);
      },
    ),
  ),
);
await store.close().catch(() => undefined);
process.stdout.write(JSON.stringify({ codes, osCodes: [...osCodes], ok }));
