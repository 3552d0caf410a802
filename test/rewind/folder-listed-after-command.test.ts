// Found by the links-inside property test (links-inside.property.test.ts, seed 1, 200 runs), shrunk to: a command
// changes the mode of the folder `b` (its record of `b`: a folder, not a complete listing, as the shell capture's
// are); then a tool handed `l`, a link to `b`, writes `l/x.txt`, which lands in `b` (its capture takes `b` whole, a
// complete listing without `x.txt`). A rewind to before both left `b/x.txt`: the closest record of `b` after the
// target is the command's, which says nothing of what `b` held, and the later listing was not looked at.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

it("a folder a command changed, then listed whole by a capture: a rewind removes the file the tool made", async () => {
  const s = await smallSession("agent-tape-listed-after-command-", { files: { "b/y.txt": "y\n" }, links: { l: "b" } });
  await s.command("chmod 750 b");
  await s.tool("write_into", ["l"], () => writeFile(join(s.workspace, "l/x.txt"), ""));
  await s.rewindThenUndo();
});
