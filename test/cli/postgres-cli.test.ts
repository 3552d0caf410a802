import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import type { StorageBackend } from "../../src/backend/index.js";
import { pgBackend, pgUrl, useSchemas } from "../helpers/postgres.js";
import { cli, seedSession } from "./harness.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// The CLI on a PostgreSQL store (`--store postgres://…`, $AGENT_TAPE_STORE): the verbs run against the real server,
// the workspace on this machine's disk (docs/cli.md, docs/postgres.md).

const schemas = useSchemas("cli");
const backends: StorageBackend[] = [];
afterAll(async () => {
  for (const backend of backends) await backend.close();
});

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** A seeded session (harness.ts: #1..#5, a.txt "one" -> "two", b.txt made) in a schema of its own. */
async function seeded() {
  const schema = schemas.make();
  const backend = pgBackend(schema);
  backends.push(backend);
  const session = await seedSession({ backend });
  const url = new URL(pgUrl());
  url.searchParams.set("schema", schema);
  return { ...session, backend, store: url.toString() };
}

async function sequences(backend: StorageBackend, id: string): Promise<number[]> {
  const store = openStore({ backend });
  try {
    return (await store.readAll(id)).map((event) => event.sequence);
  } finally {
    await store.close();
  }
}

describe("agent-tape --store postgres://…", () => {
  it("list and show read the sessions in the database", async () => {
    const s = await seeded();
    const list = await cli(["list", "--store", s.store]);
    expect(list.stderr).toBe("");
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^${s.id}\\s+fix the failing test\\s+#5\\s+`, "m"));
    const show = await cli(["show", s.id.slice(0, 10), "--json", "--store", s.store]);
    expect(show.code, show.stderr).toBe(0);
    const shown = show.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { sequence: number });
    expect(shown.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5]);
  });

  it("$AGENT_TAPE_STORE does what --store does; --root beats it, both flags at once: a usage error", async () => {
    const s = await seeded();
    const fromEnv = await cli(["list", "--json"], { env: { AGENT_TAPE_STORE: s.store } });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(JSON.parse(fromEnv.stdout).map((x: { id: string }) => x.id)).toEqual([s.id]);
    const folder = await tempDir("agent-tape-cli-root-");
    const byRoot = await cli(["list", "--json", "--root", folder], { env: { AGENT_TAPE_STORE: s.store } });
    expect(byRoot.code, byRoot.stderr).toBe(0);
    expect(JSON.parse(byRoot.stdout)).toEqual([]);
    const both = await cli(["list", "--root", folder, "--store", s.store]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
  });

  it("rewind restores the workspace on disk and cuts the tape in the database; undo puts both back", async () => {
    const s = await seeded();
    const rewound = await cli(["rewind", s.id, "--to", "2", "--store", s.store]);
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(rewound.stdout).toContain("1 file restored, 1 deleted");
    expect(await readFile(join(s.workspace, "a.txt"), "utf8")).toBe("one\n");
    expect(await readdir(s.workspace)).not.toContain("b.txt");
    expect(await sequences(s.backend, s.id)).toEqual([1, 2, 6]);

    const undone = await cli(["undo", s.id, "--store", s.store]);
    expect(undone.code, undone.stderr).toBe(0);
    expect(undone.stdout).toContain("3 events put back (as #7-#9). Undo marker: #10.");
    expect(await readFile(join(s.workspace, "a.txt"), "utf8")).toBe("two\n");
    expect(await readFile(join(s.workspace, "b.txt"), "utf8")).toBe("new file\n");
    expect(await sequences(s.backend, s.id)).toEqual([1, 2, 6, 7, 8, 9, 10]);
  });

  it("gc deletes a blob no event names; verify then finds the session intact", async () => {
    const s = await seeded();
    const orphan = Buffer.from("left by a crash: 31 bytes long\n");
    const hash = createHash("sha256").update(orphan).digest("hex");
    const locked = await s.backend.lock(s.id);
    try {
      await locked.writeBlob(hash, orphan);
    } finally {
      await locked.release();
    }
    const gc = await cli(["gc", s.id, "--json", "--store", s.store]);
    expect(gc.code, gc.stderr).toBe(0);
    expect(JSON.parse(gc.stdout)).toMatchObject({ dryRun: false, bytesFreed: orphan.length });
    expect(await s.backend.listBlobs(s.id)).not.toContain(hash);
    const verify = await cli(["verify", "--store", s.store]);
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout.trimEnd().split("\n").at(-1)).toBe("The session is intact.");
  });

  it("a URL that is not postgres://, and a server that is down: a usage error (2), STORAGE_FAILED (1)", async () => {
    const notPg = await cli(["list", "--store", "mysql://localhost/x"]);
    expect(notPg.code).toBe(2);
    expect(notPg.stderr).toContain("postgres://");
    // Port 1 on this machine: nothing listens there.
    const down = await cli(["list", "--json", "--store", "postgres://postgres:secret@127.0.0.1:1/test"]);
    expect(down.code).toBe(1);
    const error = JSON.parse(down.stderr).error;
    expect(error.code).toBe("STORAGE_FAILED");
    expect(down.stderr).not.toContain("secret");
  });

  it("the real program reaches the backend through the package's own agent-tape/postgres entry", async () => {
    const s = await seeded();
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "list", "--store", s.store],
      { cwd: repo },
    );
    expect(stderr).toBe("");
    expect(stdout).toMatch(new RegExp(`^${s.id}\\s+fix the failing test\\s+#5\\s+`, "m"));
  });
});
