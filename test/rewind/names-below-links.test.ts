// Names the tape recorded below what is now a link:
// - below one that dangles and that the rewind deletes, a rewind has nothing to do at them, and used to report
//   them skipped, "outside_workspace" (a dangling link cannot be proved to lead inside), for nothing (found by the
//   links-inside property test once it looked at what a rewind skips);
// - below one put there by someone else over a folder the tape knew, leading inside, the rewind wrote through it,
//   into the other folder. Below a link the rewind leaves, a name the tape recorded is a second name when the place
//   it lands has a record of its own (the capture makes one); without, it is reported skipped, "below_link".
import { readdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { smallSession } from "../helpers/small-session.js";

it("a folder a command made, replaced by a dangling link: a rewind to before both skips nothing", async () => {
  const s = await smallSession("agent-tape-absent-below-absent-", { files: { "a/x.txt": "x\n" } });
  await s.command("mkdir n && echo made > n/f.txt");
  await s.command("rm -rf n && ln -s gone n");
  const report = await rewind(s.store, s.id, { toSequence: s.start, mode: "files" });
  expect(report.changes).toEqual([{ path: "n", action: "delete" }]);
  expect(report.skipped).toEqual([]);
  expect(await s.tree()).toEqual(s.before);
});

it("a folder swapped by hand for a link to another folder inside: the rewind writes nothing through it", async () => {
  const s = await smallSession("agent-tape-swapped-for-link-inside-", { files: { "d/f.txt": "v0\n" }, folders: ["e"] });
  await s.tool("edit", ["d/f.txt"], () => writeFile(join(s.workspace, "d/f.txt"), "v1\n"));
  await rm(join(s.workspace, "d"), { recursive: true });
  await symlink("e", join(s.workspace, "d")); // by someone else: the tape knows nothing of it
  const report = await rewind(s.store, s.id, { toSequence: s.start, mode: "files" });
  expect(report.changes).toEqual([{ path: "d/f.txt", action: "skip", reason: "below_link" }]);
  expect(await readdir(join(s.workspace, "e"))).toEqual([]);
});
