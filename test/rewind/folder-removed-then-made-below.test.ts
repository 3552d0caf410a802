// Found by the links-inside property test (links-inside.property.test.ts, seed 3, 200 runs, after the fixes of
// f28eb05), shrunk to: a command removes the folder `c` (its record of `c`: a folder, not a complete listing); a
// tool handed `c/new/deeper` makes it, and `c` and `c/new` on the way (its capture records `c` absent, the missing
// folder highest above). A rewind to before both put `c` back and left `c/new` in it: `c/new` is on no record, and
// the closest record of `c`, the command's, says nothing of what `c` held; the tool's later record of `c` as absent
// says it held nothing but what was recorded before.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

it("a folder a command removed and a tool made again below: a rewind to before both adds nothing", async () => {
  const s = await smallSession("agent-tape-removed-made-below-", { files: { "c/w.txt": "w\n" }, modes: { c: 0o700 } });
  await s.command("rm -rf c");
  await s.tool("make_dirs", ["c/new/deeper"], () => mkdir(join(s.workspace, "c/new/deeper"), { recursive: true }));
  await s.rewindThenUndo();
});
