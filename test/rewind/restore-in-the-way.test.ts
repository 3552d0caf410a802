import { restoreTempName } from "../../src/rewind/apply-files.js";
import { mkdir, readFile, readdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// A restore renames its temp file straight over the path and looks only when that fails (one
// lstat less per file). What it must still clear: a temp a crash left (a file, or a link leading out, never
// followed), and a folder standing where the file goes.

async function editedFile() {
  const base = await realpath(await tempDir("agent-tape-in-the-way-"));
  const workspace = join(base, "ws");
  const outside = join(base, "outside");
  await mkdir(join(workspace, "src"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, "keep.txt"), "outside\n");
  await writeFile(join(workspace, "src", "a.txt"), "v1\n");
  const store = openStore({ root: join(base, "sessions") });
  const { id } = await store.create({ workspace });
  const target = await store.append(id, { type: "message", payload: { role: "user", content: "edit" } });
  await new CheckpointStore(store).around(id, { tool: "edit", paths: ["src/a.txt"] }, () =>
    writeFile(join(workspace, "src", "a.txt"), "v2\n"),
  );
  return { workspace, outside, store, id, target: target.sequence };
}

describe("what stands where a restore goes", () => {
  it("a temp a crashed run of the same rewind left, a file or a link leading out: removed, not followed", async () => {
    for (const leftover of ["file", "link"] as const) {
      const s = await editedFile();
      // The rewind's marker takes the next sequence; its only record is the first of its list.
      const marker = (await s.store.get(s.id))!.lastSequence + 1;
      const temp = join(s.workspace, "src", restoreTempName(`${s.id}/rewind/${marker}/apply`, 0));
      if (leftover === "file") await writeFile(temp, "half written");
      else await symlink(join(s.outside, "keep.txt"), temp);
      await rewind(s.store, s.id, { toSequence: s.target });
      expect(await readFile(join(s.workspace, "src", "a.txt"), "utf8")).toBe("v1\n");
      expect(await readdir(join(s.workspace, "src"))).toEqual(["a.txt"]);
      expect(await readFile(join(s.outside, "keep.txt"), "utf8")).toBe("outside\n");
    }
  });

  it("a folder with content where the file goes: it goes, the file is back (onConflict overwrite)", async () => {
    const s = await editedFile();
    await rm(join(s.workspace, "src", "a.txt"));
    await mkdir(join(s.workspace, "src", "a.txt", "inner"), { recursive: true });
    await writeFile(join(s.workspace, "src", "a.txt", "inner", "x"), "x");
    const report = await rewind(s.store, s.id, { toSequence: s.target, onConflict: "overwrite" });
    expect(report.filesRestored).toBe(1);
    expect(await readFile(join(s.workspace, "src", "a.txt"), "utf8")).toBe("v1\n");
    expect(await readdir(join(s.workspace, "src"))).toEqual(["a.txt"]);
  });
});
