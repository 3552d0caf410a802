// Found by the links-inside property test (links-inside.property.test.ts, seed 4, 120 runs, run 54), shrunk by
// hand to: `lla` a link to the link `lb`, which leads to the folder `b`; `b/lx` a link to `b` itself. A tool handed
// `b/lx` writes `b/lx/x.txt` (its capture lists `b` whole, without `x.txt`); a tool handed `lla/x.txt` deletes it
// (its capture records `x.txt` as a file by both names, `lla/x.txt` and `b/x.txt`). A rewind to before both left
// `b/x.txt`: the plan restored the record by the name below the link, `lla/x.txt`, through the link, though the
// listing of `b` says the file was not there. Below a link the rewind leaves a link, a name is a second name of
// where the link leads, and the plan now leaves it to that place's own records.
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

it("a file a tool deleted through a link to a link, made before by a tool: a rewind to before both", async () => {
  const s = await smallSession("agent-tape-link-chain-", {
    files: { "b/y.txt": "y\n" },
    links: { lb: "b", lla: "lb", "b/lx": "." },
  });
  await s.tool("edit", ["b/lx"], () => writeFile(join(s.workspace, "b/lx/x.txt"), ""));
  await s.tool("delete", ["lla/x.txt"], () => rm(join(s.workspace, "lla/x.txt")));
  await s.rewindThenUndo();
});
