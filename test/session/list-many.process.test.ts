import { execFile } from "node:child_process";
import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { childCommand } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

describe("list() with many sessions", () => {
  it("lists 2,000 sessions in a process limited to 256 open files, none unreadable (1 round)", async () => {
    const root = await tempDir();
    const store = openStore({ root, durability: "none" });
    const template = await store.create({ title: "t" });
    await store.append(template.id, { type: "message", payload: { role: "user", content: "hi" } });
    await store.close();
    // Copies of one session, each with its own id in session.json: creating 2,000 through the
    // store would fsync 2,000 times for no part of what is tested.
    const record = await readFile(join(root, template.id, "session.json"), "utf8");
    for (let i = 0; i < 2000; i++) {
      const id = `s${String(i).padStart(5, "0")}`;
      await cp(join(root, template.id), join(root, id), { recursive: true });
      await writeFile(join(root, id, "session.json"), record.replace(template.id, id));
    }
    // Through bash, for `ulimit`: the one child the tests do not start with helpers/children.ts.
    const { stdout } = await promisify(execFile)(
      "bash",
      ["-c", 'ulimit -n 256 && exec "$0" "$@"', ...childCommand("list-sessions.ts", [root])],
      { maxBuffer: 1 << 20 },
    );
    const result = JSON.parse(stdout) as { listed: number; unreadable: number; first?: unknown };
    expect(result, JSON.stringify(result.first)).toMatchObject({ listed: 2001, unreadable: 0 });
  }, 120_000);
});
